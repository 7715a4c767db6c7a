#pragma once
// The walker's shared queue of directories. Each worker walks depth-first on
// its own stack and hands a subdirectory to the queue only while some worker is
// idle, so the queue stays short (bounded fds and memory) and no core starves.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace headroom::walk {

/// A directory to walk: an open fd (or -1: open the top-level entry `slot`
/// relative to the root), the top-level entry it counts towards, its path.
struct Task {
  int fd = -1;
  std::uint32_t slot = 0;
  std::string path;
};

/// A LIFO of tasks with termination detection: pop() returns nothing once the
/// queue is empty and no worker is running a task that could add more.
class TaskQueue {
 public:
  explicit TaskQueue(unsigned workers) : workers_(workers) {}

  void push(Task task);
  /// Blocks until a task is available or the walk is over.
  [[nodiscard]] std::optional<Task> pop();
  /// Marks the task returned by the last pop() of this worker as done.
  void finish();
  /// True when another worker is waiting and the queue is short: then a worker
  /// should share a subdirectory instead of descending into it itself.
  [[nodiscard]] bool hungry() const {
    return idle_.load(std::memory_order_relaxed) > 0 &&
           size_.load(std::memory_order_relaxed) < workers_;
  }

 private:
  unsigned workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Task> tasks_;
  unsigned active_ = 0;
  std::atomic<unsigned> idle_{0};
  std::atomic<std::size_t> size_{0};
};

}  // namespace headroom::walk
