#pragma once
// One thread and one bounded queue per sink, so a webhook that hangs delays
// only its own deliveries, never sampling or the other sinks. When the queue
// is full the new event is dropped and counted (headroom_alert_sink_dropped_total).

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/sinks.h"

namespace headroom::daemon {

/// Counters of one sink, read by the exporter.
struct SinkCounters {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> dropped{0};
};

/// Delivers events to one sink on a thread of its own.
class SinkWorker {
 public:
  /// `name` labels its metrics and log lines ("webhook#1"); `on_error` is called on the
  /// worker thread with each delivery failure.
  SinkWorker(std::unique_ptr<AlertSink> sink, std::string name, std::size_t capacity,
             std::function<void(const std::string&)> on_error);
  ~SinkWorker();
  SinkWorker(const SinkWorker&) = delete;
  SinkWorker& operator=(const SinkWorker&) = delete;

  /// Queues an event without blocking; false (and counted) when the queue is full.
  bool push(AlertEvent event);
  /// Waits up to `deadline` for the queue to drain, then stops the thread.
  void stop(std::chrono::milliseconds deadline);
  [[nodiscard]] const SinkCounters& counters() const { return counters_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  /// The sink's target without secrets (AlertSink::describe()).
  [[nodiscard]] const std::string& target() const { return target_; }

 private:
  void run();
  /// Sends one event and counts it (on the worker's thread, or the caller's without one).
  void deliver(const AlertEvent& event);

  std::unique_ptr<AlertSink> sink_;
  std::string name_;
  std::string target_;
  std::size_t capacity_;
  std::function<void(const std::string&)> on_error_;
  SinkCounters counters_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<AlertEvent> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};  ///< set on stop: in-flight sends give up
  std::thread thread_;
};

}  // namespace headroom::daemon
