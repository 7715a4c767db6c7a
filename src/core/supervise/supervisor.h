#pragma once
// `headroom run`'s engine: starts the job, passes its output through unchanged
// while keeping the tail, forwards signals, reaps every process of the tree
// (headroom is a child subreaper), samples host and tree at a steady interval,
// raises live alerts, detects an ENOSPC stall, and returns everything the
// post-mortem needs. It prints nothing itself: the hooks do.
//
// The output path does no analysis: the thread that forwards the job's output
// only reads, writes and copies into the bounded ring (and queues for --log).
// The sampler thread looks at the last bytes of the ring when the output goes
// quiet (stall rule); explain runs over the kept tail after the job ended.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alerts/watcher.h"
#include "core/context.h"
#include "core/error.h"
#include "core/supervise/rotating_log.h"
#include "core/supervise/sink_writer.h"
#include "core/supervise/spawn.h"
#include "core/supervise/timeline.h"

namespace headroom {

/// How to supervise.
struct SupervisorOptions {
  SpawnOptions spawn;
  /// Where the job's stdout and stderr go (headroom's own), written from threads
  /// that never block the output path (sink_writer.h); one writer for both when
  /// they are the same file. Null: writers for fds 1 and 2 are made here.
  std::shared_ptr<SinkWriter> stdout_sink;
  std::shared_ptr<SinkWriter> stderr_sink;
  std::size_t ring_bytes = 4u << 20;  ///< output kept for the post-mortem
  /// --log, opened by the caller, so that a refused path stops the run before the job starts.
  std::shared_ptr<RotatingLog> log;
  /// After the job ended, how long a reader of headroom's output may make no
  /// progress before the rest of the queued output is given up (and counted).
  std::chrono::milliseconds output_stall{5000};
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds timeline_window{std::chrono::minutes(10)};
  /// No output for this long, while the last output mentions ENOSPC: stalled
  /// (measured by the sampler, so detected up to one interval later).
  std::chrono::milliseconds stall_after{std::chrono::minutes(5)};
  /// After the job's main process exits, how long to wait for the rest of its tree.
  std::chrono::milliseconds grace{2000};
  WatchOptions watch;  ///< host sampling and alert rules (the same as `watch`)
  /// Sent once to the job when the checkpoint disk (a --dir) is about to run out.
  std::optional<int> on_critical_signal;
};

/// Callbacks; they run on the sampler thread, never on the output path.
struct SupervisorHooks {
  std::function<void(const AlertEvent&)> on_alert;
  std::function<void(const std::string&)> on_notice;
};

/// An exit headroom saw itself (the main process, or an orphan it reaped).
struct ProcessExit {
  pid_t pid = 0;
  int wait_status = 0;  ///< as waitpid(2) returns it
  std::chrono::system_clock::time_point time;
  /// The kernel's high-water mark of its resident memory (wait4's ru_maxrss), which also
  /// covers the children it reaped itself: a peak no sample of a short job can miss.
  std::uint64_t max_rss_bytes = 0;
};

/// The job stopped producing output after an ENOSPC message.
struct Stall {
  std::chrono::system_clock::time_point last_output;
  std::chrono::system_clock::time_point detected;
  std::string last_lines;  ///< the end of the output
};

/// A signal headroom received and passed to the job.
struct ForwardedSignal {
  int signal = 0;
  std::chrono::system_clock::time_point time;
  bool to_group = false;
};

/// Everything known when supervision ends.
struct SupervisionResult {
  pid_t main_pid = 0;
  int wait_status = 0;
  int exit_code = 0;  ///< the status, or 128 + signal
  CaptureMode mode = CaptureMode::kPipe;
  std::vector<ProcessExit> exits;
  std::map<pid_t, ProcessIdentity> processes;  ///< every process of the tree seen by a sample
  Timeline timeline{1};
  std::optional<Sample> final_host;  ///< one host sample after the job ended (same cgroup only)
  /// headroom's own memory cgroup's high-water mark (memory.peak, v1 max_usage_in_bytes)
  /// when the job started and after it ended: a mark that rose was set by the job (or
  /// whatever else shares the cgroup), and is the kernel's own accounting of its peak.
  struct CgroupPeak {
    std::string path;
    std::optional<std::uint64_t> at_start;
    std::optional<std::uint64_t> at_end;
  };
  std::optional<CgroupPeak> cgroup_peak;
  std::vector<ForwardedSignal> forwarded;
  std::optional<std::string> on_critical;  ///< why the --on-critical signal was sent
  std::optional<Stall> stall;
  std::vector<AlertEvent> alerts;
  std::string output_tail;
  /// The job's last byte to headroom's stderr was not a newline.
  bool stderr_line_open = false;
  std::uint64_t output_bytes = 0;
  /// How headroom's stdout and stderr fared ("stdout", "stderr", or "stdout+stderr"
  /// when both are one file): bytes a stalled reader did not take are counted here.
  std::vector<std::pair<std::string, SinkStats>> outputs;
  std::optional<RotatingLogStats> log;
  std::vector<pid_t> left_running;  ///< processes of the job still alive when headroom returned
  std::vector<PartialFailure> unreadable;  ///< what sampling could not see (deduplicated)
};

/// Runs the job to completion. Errors: the command could not be started.
[[nodiscard]] Result<SupervisionResult> supervise(const Context& context,
                                                  const SupervisorOptions& options,
                                                  const SupervisorHooks& hooks);

/// The exit code a shell reports for a wait status: the code, or 128 + signal.
[[nodiscard]] int exit_code_of(int wait_status);

/// True when `text` mentions running out of space (ENOSPC, errno 28).
[[nodiscard]] bool mentions_enospc(std::string_view text);

}  // namespace headroom
