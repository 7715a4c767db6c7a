#pragma once
// The supervisor's sampling thread: every interval it takes a watch sample of
// the host (through the job's /proc view), samples the process tree, adds both
// to the timeline, evaluates the alert rules, sends --on-critical once, and
// checks for an ENOSPC stall. It never slows the output thread: it reads the
// ring's byte count every tick, and only when that count stops moving does it
// copy the last 2 KiB of the ring once to look for an ENOSPC message.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/supervise/output_ring.h"
#include "core/supervise/supervisor.h"

namespace headroom {

/// Starts on construction, stops in stop().
class JobSampler {
 public:
  JobSampler(const Context& context, const SupervisorOptions& options, const SupervisorHooks& hooks,
             pid_t main_pid, const OutputRing& output);
  ~JobSampler();
  JobSampler(const JobSampler&) = delete;
  JobSampler& operator=(const JobSampler&) = delete;

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
  const OutputRing& output_;
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
  // The stall rule's view of the output (sampler thread only).
  std::uint64_t output_seen_ = 0;                       ///< ring byte count at the last tick
  std::chrono::system_clock::time_point output_moved_;  ///< when that count last changed
  std::optional<bool> quiet_tail_enospc_;               ///< scanned once per quiet period
  std::vector<PartialFailure> unreadable_;
  std::optional<SupervisionResult::CgroupPeak> cgroup_peak_;
  std::thread thread_;
};

}  // namespace headroom
