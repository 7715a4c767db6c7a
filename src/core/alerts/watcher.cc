#include "core/alerts/watcher.h"

namespace headroom {

namespace {

/// The alert rules with the defaults that depend on the window filled in.
AlertConfig resolved(const WatchOptions& options) {
  AlertConfig alerts = options.alerts;
  if (!alerts.eta_min_span) {
    alerts.eta_min_span = std::chrono::duration_cast<std::chrono::seconds>(options.window / 4);
  }
  return alerts;
}

}  // namespace

Watcher::Watcher(Context context, WatchOptions options)
    : context_(std::move(context)),
      options_(std::move(options)),
      history_(options_.window, options_.history_capacity),
      engine_(resolved(options_)) {}

Result<WatchStep> Watcher::step() {
  return take_sample(context_, options_.sample, &memo_).map([this](Sample sample) {
    return feed(std::move(sample));
  });
}

WatchStep Watcher::feed(Sample sample) {
  history_.add(sample);
  WatchStep step;
  step.predictions = history_.predict();
  step.events = engine_.evaluate(sample, step.predictions);
  step.sample = std::move(sample);
  return step;
}

void Watcher::reconfigure(WatchOptions options) {
  if (options.window != options_.window || options.history_capacity != options_.history_capacity) {
    history_ = History(options.window, options.history_capacity);
  }
  engine_.reconfigure(resolved(options));
  options_ = std::move(options);
}

}  // namespace headroom
