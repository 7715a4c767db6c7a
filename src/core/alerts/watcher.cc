#include "core/alerts/watcher.h"

namespace headroom {

Watcher::Watcher(Context context, WatchOptions options)
    : context_(std::move(context)),
      options_(std::move(options)),
      history_(options_.window, options_.history_capacity),
      engine_(options_.alerts) {}

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
  engine_.reconfigure(options.alerts);
  options_ = std::move(options);
}

}  // namespace headroom
