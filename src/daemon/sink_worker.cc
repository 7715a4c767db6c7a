#include "daemon/sink_worker.h"

#include "core/threads.h"

namespace headroom::daemon {

SinkWorker::SinkWorker(std::unique_ptr<AlertSink> sink, std::string name, std::size_t capacity,
                       std::function<void(const std::string&)> on_error)
    : sink_(std::move(sink)),
      name_(std::move(name)),
      target_(sink_->describe()),
      capacity_(capacity),
      on_error_(std::move(on_error)) {
  // A task limit may refuse the thread: this sink then delivers on the sampling thread.
  if (auto thread = try_start_thread([this] { run(); })) thread_ = std::move(*thread);
}

SinkWorker::~SinkWorker() { stop(std::chrono::milliseconds(0)); }

bool SinkWorker::push(AlertEvent event) {
  if (!thread_.joinable()) {
    if (stopping_) return false;
    deliver(event);
    return true;
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= capacity_) {
      counters_.dropped.fetch_add(1);
      return false;
    }
    queue_.push_back(std::move(event));
  }
  changed_.notify_all();
  return true;
}

void SinkWorker::stop(std::chrono::milliseconds deadline) {
  {
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) {
      stopping_ = true;
      return;
    }
    changed_.wait_for(lock, deadline, [this] { return queue_.empty() && !busy_; });
    stopping_ = true;
    cancel_ = true;
    counters_.dropped.fetch_add(queue_.size());
    queue_.clear();
  }
  changed_.notify_all();
  // In-flight sends see cancel_ within ~20 ms (curl's progress callback,
  // the backoff and exec wait loops), so this join is short.
  thread_.join();
}

void SinkWorker::deliver(const AlertEvent& event) {
  const Result<void> sent = sink_->send(event, cancel_);
  if (sent) {
    counters_.sent.fetch_add(1);
  } else {
    counters_.failed.fetch_add(1);
    if (on_error_) on_error_(name_ + " (" + target_ + "): " + sent.error().message);
  }
}

void SinkWorker::run() {
  while (true) {
    AlertEvent event;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      event = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    deliver(event);
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace headroom::daemon
