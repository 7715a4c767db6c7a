#pragma once
// The supervisor's sampling thread: every interval it takes a watch sample of
// the host (through the job's /proc view), samples the process tree, adds both
// to the timeline, evaluates the alert rules, sends --on-critical once, and
// checks for an ENOSPC stall. The output thread only touches two atomics.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/supervise/supervisor.h"

namespace headroom {

/// Starts on construction, stops in stop().
class JobSampler {
 public:
  JobSampler(const Context& context, const SupervisorOptions& options,
             const SupervisorHooks& hooks, pid_t main_pid);
  ~JobSampler();
  JobSampler(const JobSampler&) = delete;
  JobSampler& operator=(const JobSampler&) = delete;

  /// Called by the output thread for every chunk (cheap: atomics only).
  void note_output(bool ends_with_enospc);
  /// Stops the thread and moves its results into `result`.
  void stop(SupervisionResult& result);

 private:
  void loop();
  void tick();
  void check_on_critical(const std::vector<AlertEvent>& events);
  void check_stall();

  const Context& context_;
  const SupervisorOptions& options_;
  const SupervisorHooks& hooks_;
  pid_t main_pid_;
  std::atomic<std::int64_t> last_output_ms_;
  std::atomic<bool> enospc_tail_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  // Owned by the sampler thread until stop() joins it.
  std::unique_ptr<Watcher> watcher_;
  std::unique_ptr<ProcessTreeSampler> tree_;
  Timeline timeline_;
  std::vector<AlertEvent> alerts_;
  std::optional<std::string> on_critical_;
  std::optional<Stall> stall_;
  std::vector<std::string> unreadable_;
  std::thread thread_;
};

}  // namespace headroom
