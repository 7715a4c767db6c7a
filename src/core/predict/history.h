#pragma once
// Bounded in-memory history of samples and the predictions drawn from it.
// Holds only the numbers prediction needs (not whole samples), dropped once
// older than the window, and never more than `capacity` points per series.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/predict/fill_eta.h"
#include "core/sample/sample.h"

namespace headroom {

/// All predictions for the newest sample.
struct Predictions {
  std::map<std::string, FillEstimate> filesystems;  ///< by FilesystemSample::path
  std::optional<FillEstimate> memory;               ///< MemAvailable going to 0

  /// The estimate for a watched path, or nullptr.
  [[nodiscard]] const FillEstimate* filesystem(const std::string& path) const;
};

/// Sliding window of remaining-bytes series, one per watched path plus memory.
class History {
 public:
  /// `window`: how far back predictions look; `capacity`: points kept per series at most.
  explicit History(std::chrono::milliseconds window, std::size_t capacity = 4096,
                   FillOptions fill = {});

  /// Appends the sample's numbers and drops points older than the window. A
  /// filesystem whose device changed (unmounted, remounted) restarts its series.
  void add(const Sample& sample);
  /// Predictions from the points now in the window.
  [[nodiscard]] Predictions predict() const;
  /// Points in the series of a watched path (or "memory"); for tests and JSON.
  [[nodiscard]] std::size_t size(const std::string& key) const;
  [[nodiscard]] std::chrono::milliseconds window() const { return window_; }
  /// Retunes the estimate (a reloaded config); the points are kept.
  void set_fill_options(const FillOptions& fill) { fill_ = fill; }

 private:
  struct Series {
    std::string device;
    /// Oldest first, contiguous: each prediction fits it in place (the oldest points
    /// leave with one move of the rest, cheaper than copying it out for every fit).
    std::vector<SeriesPoint> points;
    /// The slopes of its last fits: the next prediction, a point later, reuses them.
    mutable FitCache fits;
  };
  void append(Series& series, double seconds, double remaining);

  std::chrono::milliseconds window_;
  std::size_t capacity_;
  FillOptions fill_;
  std::optional<std::chrono::steady_clock::time_point> origin_;
  std::map<std::string, Series> series_;
};

}  // namespace headroom
