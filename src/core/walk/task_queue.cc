#include "core/walk/task_queue.h"

namespace headroom::walk {

void TaskQueue::push(Task task) {
  {
    const std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    size_.store(tasks_.size(), std::memory_order_relaxed);
  }
  ready_.notify_one();
}

std::optional<Task> TaskQueue::pop() {
  std::unique_lock lock(mutex_);
  idle_.fetch_add(1, std::memory_order_relaxed);
  ready_.wait(lock, [this] { return !tasks_.empty() || active_ == 0; });
  idle_.fetch_sub(1, std::memory_order_relaxed);
  if (tasks_.empty()) {
    lock.unlock();
    ready_.notify_all();  // the walk is over: wake every other waiter
    return std::nullopt;
  }
  Task task = std::move(tasks_.back());
  tasks_.pop_back();
  size_.store(tasks_.size(), std::memory_order_relaxed);
  ++active_;
  return task;
}

void TaskQueue::finish() {
  bool over = false;
  {
    const std::lock_guard lock(mutex_);
    --active_;
    over = active_ == 0 && tasks_.empty();
  }
  if (over) ready_.notify_all();
}

}  // namespace headroom::walk
