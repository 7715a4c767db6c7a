#pragma once
// The bounded resource timeline of a supervised job: host samples (the watch
// sampler: disks, /dev/shm, memory, PSI, cgroup OOM counter) joined with
// samples of the job's process tree, oldest first, the last few minutes only.

#include <cstddef>
#include <deque>
#include <optional>

#include "core/sample/sample.h"
#include "core/supervise/process_tree.h"

namespace headroom {

/// One tick of the supervisor's sampler.
struct JobSample {
  std::optional<Sample> host;  ///< nullopt when take_sample failed
  TreeSample tree;
};

/// A ring of JobSamples: adding beyond the capacity drops the oldest.
class Timeline {
 public:
  explicit Timeline(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  void add(JobSample sample) {
    if (samples_.size() == capacity_) samples_.pop_front();
    samples_.push_back(std::move(sample));
  }
  [[nodiscard]] const std::deque<JobSample>& samples() const { return samples_; }
  [[nodiscard]] bool empty() const { return samples_.empty(); }

 private:
  std::size_t capacity_;
  std::deque<JobSample> samples_;
};

}  // namespace headroom
