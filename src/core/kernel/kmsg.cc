// Kernel log reader and OOM-kill parser; see kmsg.h for the format and its quirks.

#include "core/kernel/kmsg.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <vector>

#include "core/kernel/text.h"
#include "core/units.h"

namespace headroom {

namespace {

// The whole printk ring buffer is at most a few MiB (log_buf_len); this bound
// only guards against a fixture or device that never ends.
constexpr std::size_t kMaxLogBytes = std::size_t{32} << 20;

template <typename Number>
bool parse_number(std::string_view text, Number& value) {
  return !text.empty() &&
         std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc();
}

// The leading digits of `text`, e.g. "65432kB," -> 65432.
std::uint64_t leading_number(std::string_view text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// Value of "key:NNNkB" in a "Killed process" line, in bytes.
std::uint64_t kilobytes_after(std::string_view message, std::string_view key) {
  const std::size_t at = message.find(key);
  if (at == std::string_view::npos) return 0;
  return leading_number(message.substr(at + key.size())) * kKiB;
}

// Value of "key=" in an oom-kill: line, up to the next ',' (or `until`).
std::string value_of(std::string_view message, std::string_view key, std::string_view until = ",") {
  std::size_t at = 0;
  while ((at = message.find(key, at)) != std::string_view::npos) {
    // Only whole keys: "task=" must not match inside "task_memcg=".
    if (at == 0 || message[at - 1] == ',' || message[at - 1] == ':') break;
    at += key.size();
  }
  if (at == std::string_view::npos) return {};
  const std::string_view rest = message.substr(at + key.size());
  return std::string(rest.substr(0, std::min(rest.find(until), rest.size())));
}

OomConstraint constraint_from(std::string_view name) {
  if (name == "CONSTRAINT_NONE") return OomConstraint::kHost;
  if (name == "CONSTRAINT_MEMCG") return OomConstraint::kMemoryCgroup;
  if (name == "CONSTRAINT_CPUSET") return OomConstraint::kCpuset;
  if (name == "CONSTRAINT_MEMORY_POLICY") return OomConstraint::kMempolicy;
  return OomConstraint::kUnknown;
}

// "... process 4242 (python3) ..." -> pid and comm; false when not of that shape.
bool pid_and_comm(std::string_view text, std::int64_t& pid, std::string& comm) {
  const std::size_t open = text.find(" (");
  if (open == std::string_view::npos || !parse_number(text.substr(0, open), pid)) return false;
  // A comm may itself contain ") ", so take the last ')' before the field list.
  const std::size_t fields = text.find(" total-vm:");
  const std::size_t close = text.substr(0, fields).rfind(')');
  if (close == std::string_view::npos || close < open + 2) return false;
  comm = std::string(text.substr(open + 2, close - open - 2));
  return true;
}

OomEvent* latest_for(std::vector<OomEvent>& events, std::int64_t pid) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->pid == pid) return &*it;
  }
  return nullptr;
}

std::string permission_reason(const Context& context, const Error& error) {
  auto restrict_text = context.root.read(context.root.proc("sys/kernel/dmesg_restrict"), 64);
  const uid_t uid = context.syscalls != nullptr ? context.syscalls->effective_uid() : ::geteuid();
  if (restrict_text && !restrict_text->empty() && restrict_text->front() == '1' && uid != 0) {
    return fmt::format("kernel.dmesg_restrict=1 and not root (uid {}): {}", uid, error.message);
  }
  return error.message;
}

}  // namespace

std::vector<KmsgRecord> parse_kmsg(std::string_view text) {
  std::vector<KmsgRecord> records;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    // " KEY=value" continuation lines carry the device of the record: not needed.
    if (line.empty() || line.front() == ' ') continue;
    const std::size_t semicolon = line.find(';');
    if (semicolon == std::string_view::npos) continue;
    std::string_view header = line.substr(0, semicolon);
    std::vector<std::string_view> fields;
    while (!header.empty()) {
      const std::size_t comma = std::min(header.find(','), header.size());
      fields.push_back(header.substr(0, comma));
      header.remove_prefix(std::min(comma + 1, header.size()));
    }
    KmsgRecord record;
    int priority = 0;
    std::uint64_t usec = 0;
    if (fields.size() < 3 || !parse_number(fields[0], priority) ||
        !parse_number(fields[1], record.sequence) || !parse_number(fields[2], usec)) {
      continue;
    }
    record.facility = priority >> 3;
    record.level = priority & 7;
    record.since_boot = std::chrono::microseconds(usec);
    record.message = std::string(line.substr(semicolon + 1));
    records.push_back(std::move(record));
  }
  return records;
}

std::optional<std::chrono::system_clock::time_point> read_boot_time(const Context& context) {
  const SysRoot& root = context.root;
  if (auto uptime = root.read(root.proc("uptime"), 256); uptime && context.syscalls != nullptr) {
    const std::string_view text = *uptime;
    double seconds = 0;
    const std::string_view first = text.substr(0, std::min(text.find(' '), text.size()));
    if (parse_number(first, seconds) && seconds >= 0) {
      const auto since = std::chrono::microseconds(std::llround(seconds * 1e6));
      return context.syscalls->now() -
             std::chrono::duration_cast<std::chrono::system_clock::duration>(since);
    }
  }
  if (auto stat = root.read(root.proc("stat"), 1 << 20)) {
    const std::size_t at = stat->find("\nbtime ");
    if (at != std::string::npos) {
      std::int64_t btime = 0;
      const std::string_view rest = std::string_view(*stat).substr(at + 7);
      if (parse_number(rest.substr(0, rest.find('\n')), btime)) {
        return std::chrono::system_clock::time_point(std::chrono::seconds(btime));
      }
    }
  }
  return std::nullopt;
}

Result<KernelLog> read_kmsg(const Context& context) {
  const std::filesystem::path path = context.root.dev("kmsg");
  const std::string shown = context.root.display(path).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    Error error = Error::from_errno(errno, shown);
    if (error.code == Error::Code::kPermissionDenied)
      error.message = permission_reason(context, error);
    return fail(error);
  }
  std::string text;
  // /dev/kmsg returns one record per read and EINVAL when the buffer is
  // smaller than the record; records are at most 8 KiB (CONSOLE_EXT_LOG_MAX).
  std::vector<char> buffer(16 * 1024);
  while (text.size() < kMaxLogBytes) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got > 0) {
      text.append(buffer.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got == 0) break;                             // a regular file (fixture) ends
    if (errno == EINTR || errno == EPIPE) continue;  // EPIPE: records overwritten while reading
    if (errno == EAGAIN) break;                      // the end of the live buffer
    const int saved = errno;
    ::close(fd);
    Error error = Error::from_errno(saved, shown);
    if (error.code == Error::Code::kPermissionDenied)
      error.message = permission_reason(context, error);
    return fail(error);
  }
  ::close(fd);
  KernelLog log;
  log.records = parse_kmsg(text);
  log.boot_time = read_boot_time(context);
  return log;
}

namespace {
constexpr int kMaxDrained = 4096;  ///< records read per call at most
}  // namespace

bool KernelLogWatch::logged_since_last(const Context& context) {
  if (!opened_) {
    opened_ = true;
    UniqueFd fd(::open(context.root.dev("kmsg").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    struct stat info {};
    if (!fd.ok() || ::fstat(fd.get(), &info) != 0 ||
        !(S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode))) {
      return true;
    }
    ::lseek(fd.get(), 0, SEEK_END);  // the records from now on (a FIFO has none yet)
    fd_ = std::move(fd);
    return true;
  }
  if (!fd_.ok()) return true;
  pollfd watched{fd_.get(), POLLIN, 0};
  if (::poll(&watched, 1, 0) == 0) return false;
  if ((watched.revents & POLLIN) == 0) return true;  // a FIFO's writer gone: cannot tell
  // Read to the end, so the next poll sees only records logged after this call; a log
  // that floods faster than it is read is left for the next call, not chased.
  std::array<char, 16 * 1024> record{};
  for (int records = 0; records < kMaxDrained; ++records) {
    const ssize_t got = ::read(fd_.get(), record.data(), record.size());
    if (got > 0) continue;
    if (got < 0 && (errno == EINTR || errno == EPIPE)) continue;
    if (got < 0 && errno == EAGAIN) break;
    fd_ = UniqueFd();  // an error or the end of a FIFO: stop telling
    break;
  }
  return true;
}

std::uint64_t next_sequence(const KernelLog& log) {
  return log.records.empty() ? 0 : log.records.back().sequence + 1;
}

std::string_view to_string(OomConstraint constraint) {
  switch (constraint) {
    case OomConstraint::kHost:
      return "host";
    case OomConstraint::kMemoryCgroup:
      return "memcg";
    case OomConstraint::kCpuset:
      return "cpuset";
    case OomConstraint::kMempolicy:
      return "mempolicy";
    case OomConstraint::kUnknown:
      break;
  }
  return "unknown";
}

std::vector<OomEvent> parse_oom_events(
    std::span<const KmsgRecord> records,
    std::optional<std::chrono::system_clock::time_point> boot_time) {
  std::vector<OomEvent> events;
  // Indexes of events whose "Killed process" line has not been seen yet.
  std::vector<std::size_t> pending;
  for (const KmsgRecord& record : records) {
    const std::string_view message = record.message;
    if (message.rfind("oom-kill:", 0) == 0) {
      OomEvent event;
      event.since_boot = record.since_boot;
      event.sequence = record.sequence;
      event.constraint = constraint_from(value_of(message, "constraint="));
      event.oom_cgroup = value_of(message, "oom_memcg=");
      event.task_cgroup = value_of(message, "task_memcg=");
      // A comm may contain ',': take everything up to ",pid=".
      event.comm = value_of(message, "task=", ",pid=");
      parse_number(std::string_view(value_of(message, "pid=")), event.pid);
      std::int64_t uid = 0;
      if (parse_number(std::string_view(value_of(message, "uid=")), uid)) event.uid = uid;
      pending.push_back(events.size());
      events.push_back(std::move(event));
      continue;
    }
    const std::size_t killed = message.find("Killed process ");
    if (killed != std::string_view::npos) {
      std::int64_t pid = 0;
      std::string comm;
      if (!pid_and_comm(message.substr(killed + 15), pid, comm)) continue;
      OomEvent* event = nullptr;
      for (auto it = pending.begin(); it != pending.end(); ++it) {
        if (events[*it].pid == pid) {
          event = &events[*it];
          pending.erase(it);
          break;
        }
      }
      if (event == nullptr) {  // kernels before 4.19 print no oom-kill: line
        events.emplace_back();
        event = &events.back();
        event->since_boot = record.since_boot;
        event->sequence = record.sequence;
        event->pid = pid;
      }
      if (event->comm.empty()) event->comm = comm;
      if (event->constraint == OomConstraint::kUnknown) {
        event->constraint = message.rfind("Memory cgroup out of memory", 0) == 0
                                ? OomConstraint::kMemoryCgroup
                                : OomConstraint::kHost;
      }
      event->total_vm_bytes = kilobytes_after(message, "total-vm:");
      event->anon_rss_bytes = kilobytes_after(message, "anon-rss:");
      event->file_rss_bytes = kilobytes_after(message, "file-rss:");
      event->shmem_rss_bytes = kilobytes_after(message, "shmem-rss:");
      if (!event->uid) {
        const std::size_t at = message.find("UID:");
        std::int64_t uid = 0;
        if (at != std::string_view::npos) {
          const std::string_view rest = message.substr(at + 4);
          if (parse_number(rest.substr(0, std::min(rest.find(' '), rest.size())), uid))
            event->uid = uid;
        }
      }
      continue;
    }
    constexpr std::string_view kReaped = "oom_reaper: reaped process ";
    if (message.rfind(kReaped, 0) == 0) {
      std::int64_t pid = 0;
      const std::string_view rest = message.substr(kReaped.size());
      if (parse_number(rest.substr(0, std::min(rest.find(' '), rest.size())), pid)) {
        if (OomEvent* event = latest_for(events, pid)) event->reaped = true;
      }
    }
  }
  if (boot_time) {
    for (OomEvent& event : events) {
      event.time = *boot_time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                    event.since_boot);
    }
  }
  return events;
}

}  // namespace headroom
