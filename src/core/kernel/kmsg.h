#pragma once
// The kernel log: /dev/kmsg records and the OOM kills in them.
// Format: Documentation/ABI/testing/dev-kmsg: one record per read(2),
//   "prio,seq,usec,flags[,more];message\n" followed by optional " KEY=value\n"
//   continuation lines; prio is facility << 3 | level; usec is microseconds since
//   boot on the kernel's local clock (which stops during suspend, so wall times
//   of records made before a suspend come out late).
// Quirks: a non-blocking read returns EAGAIN at the end of the buffer, EPIPE when
// the next record was overwritten (reading continues with the oldest kept);
// opening fails with EPERM for non-root when kernel.dmesg_restrict=1. In a
// fixture tree kmsg is a regular file that reads to EOF.
// OOM lines (mm/oom_kill.c, Linux 5.x/6.x):
//   "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,
//    oom_memcg=/docker/abc,task_memcg=/docker/abc,task=python3,pid=4242,uid=0"
//   "Memory cgroup out of memory: Killed process 4242 (python3) total-vm:123456kB,
//    anon-rss:65432kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:300kB oom_score_adj:0"
//   "Out of memory: Killed process 4242 (python3) total-vm:...": a host-wide kill
//   "oom_reaper: reaped process 4242 (python3), now anon-rss:0kB, ..."

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/unique_fd.h"

namespace headroom {

/// One record of the kernel log.
struct KmsgRecord {
  int facility = 0;  ///< 0 = kernel
  int level = 0;     ///< 0 = emerg .. 7 = debug
  std::uint64_t sequence = 0;
  std::chrono::microseconds since_boot{0};
  std::string message;
};

/// Parses kmsg text (records as /dev/kmsg returns them, concatenated). Continuation
/// lines are skipped; a malformed header line is skipped too (the log is best effort).
[[nodiscard]] std::vector<KmsgRecord> parse_kmsg(std::string_view text);

/// The kernel log as read, with what is needed to put wall times on it.
struct KernelLog {
  std::vector<KmsgRecord> records;
  /// Wall time of boot: now - /proc/uptime, else /proc/stat btime; nullopt if neither.
  std::optional<std::chrono::system_clock::time_point> boot_time;
};

/// The sequence number the kernel log's next record will get (one past the last
/// record in the buffer; 0 for an empty log): a record whose sequence is at least
/// this one was written after this call.
[[nodiscard]] std::uint64_t next_sequence(const KernelLog& log);

/// Reads <root>/dev/kmsg to its current end without blocking. kPermissionDenied
/// with a message naming dmesg_restrict when that is the cause.
[[nodiscard]] Result<KernelLog> read_kmsg(const Context& context);

/// Whether the kernel has logged anything since the last call, without reading the log:
/// /dev/kmsg kept open at its end and polled (a `poll` where reading vmstat regenerates
/// 170 lines). Every OOM kill logs "Killed process" (mm/oom_kill.c, not rate-limited), so
/// a counter only an OOM kill moves cannot have moved while the log was quiet. Says true
/// (maybe) when it cannot tell: at the first call, without a readable /dev/kmsg (non-root
/// under dmesg_restrict, a container without it), or in a fixture tree where kmsg is a
/// regular file. A FIFO there stands for the live device in tests.
class KernelLogWatch {
 public:
  [[nodiscard]] bool logged_since_last(const Context& context);

 private:
  UniqueFd fd_;
  bool opened_ = false;
};

/// Wall time of boot from /proc/uptime and the context's clock, else /proc/stat btime.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> read_boot_time(
    const Context& context);

/// Which limit the OOM killer enforced.
enum class OomConstraint { kHost, kMemoryCgroup, kCpuset, kMempolicy, kUnknown };

/// "host", "memcg", "cpuset", "mempolicy", "unknown".
[[nodiscard]] std::string_view to_string(OomConstraint constraint);

/// One OOM kill, merged from its oom-kill: line, its "Killed process" line and the reaper line.
struct OomEvent {
  std::chrono::microseconds since_boot{0};
  std::optional<std::chrono::system_clock::time_point> time;  ///< when boot time is known
  /// The kernel log's sequence number of its first record: unlike the time, which is
  /// the kernel's local clock put on the wall clock, it orders records exactly.
  std::uint64_t sequence = 0;
  std::int64_t pid = 0;
  std::string comm;  ///< the killed command, e.g. "python3"
  OomConstraint constraint = OomConstraint::kUnknown;
  std::string oom_cgroup;   ///< oom_memcg: the cgroup whose limit was hit ("" when host-wide)
  std::string task_cgroup;  ///< task_memcg: the killed task's cgroup
  std::optional<std::int64_t> uid;
  std::uint64_t total_vm_bytes = 0;
  std::uint64_t anon_rss_bytes = 0;
  std::uint64_t file_rss_bytes = 0;
  std::uint64_t shmem_rss_bytes = 0;
  bool reaped = false;  ///< the oom_reaper freed its memory

  /// anon + file + shmem resident memory at the kill.
  [[nodiscard]] std::uint64_t rss_bytes() const {
    return anon_rss_bytes + file_rss_bytes + shmem_rss_bytes;
  }
};

/// Finds the OOM kills in `records`, oldest first; `boot_time` gives them wall times.
[[nodiscard]] std::vector<OomEvent> parse_oom_events(
    std::span<const KmsgRecord> records,
    std::optional<std::chrono::system_clock::time_point> boot_time = std::nullopt);

}  // namespace headroom
