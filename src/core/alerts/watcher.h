#pragma once
// One step of `watch` for every front end (CLI loop, `run`, Python Monitor):
// take a sample, add it to the history, predict, evaluate the alert rules.

#include <chrono>
#include <vector>

#include "core/alerts/rules.h"
#include "core/context.h"
#include "core/predict/history.h"
#include "core/sample/sample.h"

namespace headroom {

/// What a watcher samples, how far back it predicts, and its alert rules.
struct WatchOptions {
  SampleOptions sample;
  std::chrono::milliseconds window{std::chrono::minutes(10)};
  std::size_t history_capacity = 4096;  ///< points per series at most
  AlertConfig alerts;
};

/// The outcome of one step.
struct WatchStep {
  Sample sample;
  Predictions predictions;
  std::vector<AlertEvent> events;  ///< to hand to the sinks
};

/// Sample -> history -> predictions -> alert events. Not thread-safe; one owner.
class Watcher {
 public:
  Watcher(Context context, WatchOptions options);

  /// Takes a sample now and evaluates it. Fails only on invalid options.
  [[nodiscard]] Result<WatchStep> step();
  /// Evaluates a sample taken elsewhere (tests, replay).
  [[nodiscard]] WatchStep feed(Sample sample);
  /// Applies a reloaded config: sample options and alert rules; the history is
  /// kept unless the window changed.
  void reconfigure(WatchOptions options);
  [[nodiscard]] const WatchOptions& options() const { return options_; }
  [[nodiscard]] const AlertEngine& engine() const { return engine_; }
  /// The alert engine, to restore alerts that fired before a restart.
  [[nodiscard]] AlertEngine& engine() { return engine_; }

 private:
  Context context_;
  WatchOptions options_;
  History history_;
  AlertEngine engine_;
  SampleMemo memo_;  ///< spares repeated /proc scans between samples
};

}  // namespace headroom
