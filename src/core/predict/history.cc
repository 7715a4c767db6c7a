#include "core/predict/history.h"

#include <algorithm>

namespace headroom {

namespace {

constexpr const char* kMemoryKey = "memory";

}  // namespace

const FillEstimate* Predictions::filesystem(const std::string& path) const {
  const auto found = filesystems.find(path);
  return found == filesystems.end() ? nullptr : &found->second;
}

History::History(std::chrono::milliseconds window, std::size_t capacity, FillOptions fill)
    : window_(window), capacity_(std::max<std::size_t>(capacity, 2)), fill_(fill) {}

void History::append(Series& series, double seconds, double remaining) {
  std::vector<SeriesPoint>& points = series.points;
  points.push_back({seconds, remaining});
  const double oldest = seconds - std::chrono::duration<double>(window_).count();
  auto keep = std::find_if(points.begin(), points.end(),
                           [&](const SeriesPoint& point) { return point.seconds >= oldest; });
  if (points.end() - keep > static_cast<std::ptrdiff_t>(capacity_)) {
    keep = points.end() - static_cast<std::ptrdiff_t>(capacity_);
  }
  points.erase(points.begin(), keep);
}

void History::add(const Sample& sample) {
  if (!origin_) origin_ = sample.monotonic;
  const double seconds = std::chrono::duration<double>(sample.monotonic - *origin_).count();
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (filesystem.stuck) continue;  // a hung mount: its trend resumes when it answers
    if (!filesystem.ok) {
      // A vanished or unmounted path has no trend; start over when it returns.
      series_.erase(filesystem.path);
      continue;
    }
    Series& series = series_[filesystem.path];
    if (series.device != filesystem.device) {
      series.points.clear();  // another filesystem is mounted there now
      series.device = filesystem.device;
    }
    append(series, seconds, static_cast<double>(filesystem.avail_bytes));
  }
  if (const auto left = sample.memory_left()) append(series_[kMemoryKey], seconds, left->first);
}

Predictions History::predict() const {
  Predictions predictions;
  // Watched paths on one filesystem (a checkpoint dir and /tmp on /) usually
  // carry the same points: estimate those once.
  std::map<std::string, std::pair<const Series*, FillEstimate>, std::less<>> by_device;
  for (const auto& [key, series] : series_) {
    FillEstimate estimate;
    const auto same = series.device.empty() ? by_device.end() : by_device.find(series.device);
    if (same != by_device.end() && same->second.first->points == series.points) {
      estimate = same->second.second;
    } else {
      estimate = fill_eta(series.points, fill_, &series.fits);
      if (!series.device.empty())
        by_device.insert_or_assign(series.device, std::pair{&series, estimate});
    }
    if (key == kMemoryKey) {
      predictions.memory = estimate;
    } else {
      predictions.filesystems.emplace(key, estimate);
    }
  }
  return predictions;
}

std::size_t History::size(const std::string& key) const {
  const auto found = series_.find(key);
  return found == series_.end() ? 0 : found->second.points.size();
}

}  // namespace headroom
