#include "core/clean/audit_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <ctime>

#include "core/text_out.h"

namespace headroom {

nlohmann::ordered_json audit_record(const CleanItem& item,
                                    std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  std::array<char, 32> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::ordered_json record;
  record["time"] = stamp.data();
  record["action"] = "removed";
  record["kind"] = std::string(to_string(item.kind));
  record["path"] = item.path.string();
  if (item.kind == CleanKind::kSysvSegment) {
    record["shmid"] = item.shmid;
    record["key"] = item.key;
  } else {
    record["device"] = item.id.device;
    record["inode"] = item.id.inode;
  }
  record["uid"] = item.uid;
  record["owner"] = item.owner;
  record["bytes"] = item.bytes;
  record["files"] = item.files;
  record["age_seconds"] = item.age.count();
  record["why"] = item.why_safe;
  record["by_pid"] = ::getpid();
  return record;
}

Result<void> append_audit(const std::filesystem::path& log, const CleanItem& item,
                          std::chrono::system_clock::time_point when) {
  std::error_code ignored;
  if (log.has_parent_path() && !std::filesystem::exists(log.parent_path(), ignored)) {
    std::filesystem::create_directories(log.parent_path(), ignored);
    ::chmod(log.parent_path().c_str(), 0700);
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(Error::from_errno(errno, log.string()));
  const std::string line = json_text(audit_record(item, when)) + "\n";
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    return fail(Error::from_errno(saved, log.string()));
  return {};
}

}  // namespace headroom
