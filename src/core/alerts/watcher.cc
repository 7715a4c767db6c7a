#include "core/alerts/watcher.h"

#include "core/series/series_space.h"

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

/// The estimate's tuning: a trend as long as eta_min_span may override the window's.
FillOptions fill_options(const AlertConfig& alerts) {
  FillOptions fill;
  fill.recent_seconds =
      static_cast<double>(alerts.eta_min_span.value_or(std::chrono::seconds(0)).count());
  return fill;
}

}  // namespace

Watcher::Watcher(Context context, WatchOptions options)
    : context_(std::move(context)),
      options_(std::move(options)),
      history_(options_.window, options_.history_capacity, fill_options(resolved(options_))),
      engine_(resolved(options_)) {}

Result<WatchStep> Watcher::step() {
  return take_sample(context_, options_.sample, &memo_).map([this](Sample sample) {
    if (options_.alerts.checkpoint_bytes) {
      // The checkpoint rule counts what retention frees: it needs the series on disk.
      for (FilesystemSample& filesystem : sample.filesystems) {
        if (filesystem.role != FsRole::kDir || !filesystem.ok) continue;
        if (auto series = read_active_series(context_, filesystem.path)) {
          filesystem.series = std::move(*series);
        }
      }
    }
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
  const AlertConfig alerts = resolved(options);
  if (options.window != options_.window || options.history_capacity != options_.history_capacity) {
    history_ = History(options.window, options.history_capacity, fill_options(alerts));
  } else {
    history_.set_fill_options(fill_options(alerts));
  }
  engine_.reconfigure(alerts);
  options_ = std::move(options);
}

}  // namespace headroom
