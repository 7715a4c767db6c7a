#include "core/kernel/proc_pid_status.h"

#include <charconv>

#include "core/kernel/text.h"

namespace headroom {

namespace {

template <typename T>
bool leading_number(std::string_view text, T& value) {
  text = trim_blanks(text);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end != text.data();
}

// The numbers of a blank-separated list ("1000\t1000\t1000\t1000").
template <typename T>
std::vector<T> numbers(std::string_view text) {
  std::vector<T> out;
  for (;;) {
    text = trim_blanks(text);
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end == text.data()) return out;
    out.push_back(value);
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  }
}

}  // namespace

Result<ProcStatus> parse_proc_status(std::string_view text) {
  ProcStatus status;
  bool have_pid = false;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    std::uint64_t number = 0;
    if (key == "Name") {
      status.name = std::string(trim_blanks(value));
    } else if (key == "Pid") {
      have_pid = leading_number(value, status.pid);
    } else if (key == "PPid") {
      (void)leading_number(value, status.ppid);
    } else if (key == "Uid") {
      const auto uids = numbers<uid_t>(value);
      if (!uids.empty()) status.uid = uids.front();
      status.fs_uid = uids.size() >= 4 ? uids[3] : status.uid;
    } else if (key == "Gid") {
      const auto gids = numbers<gid_t>(value);
      if (!gids.empty()) status.fs_gid = gids.size() >= 4 ? gids[3] : gids.front();
    } else if (key == "Groups") {
      status.groups = numbers<gid_t>(value);
    } else if (key == "VmRSS" && leading_number(value, number)) {
      status.rss_bytes = number * 1024;
    } else if (key == "RssShmem" && leading_number(value, number)) {
      status.rss_shmem_bytes = number * 1024;
    } else if (key == "Threads") {
      (void)leading_number(value, status.threads);
    }
  }
  if (!have_pid) return fail(Error::parse("status: no Pid line"));
  return status;
}

Result<ProcStatus> read_proc_status(const Context& context, pid_t pid) {
  const auto path = context.root.proc(std::to_string(pid) + "/status");
  auto text = context.root.read(path);
  if (!text) return fail(text.error());
  auto status = parse_proc_status(*text);
  if (!status) return fail(Error::parse(path.string() + ": " + status.error().message));
  return status;
}

}  // namespace headroom
