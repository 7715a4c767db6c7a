#pragma once
// Use% thresholds: one rule for check, watch, run and the Python module. Messages name
// the fields (warn_percent, critical_percent), which are the Python arguments' and the
// watch config's keys; the CLI says its flags instead (cli/check_options.cc).

#include <optional>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// How a pair of thresholds breaks the rule, for a front that words it its own way (the
/// watch config names the line or flag that set the field).
struct ThresholdViolation {
  enum class Kind {
    kOutOfRange,         ///< `field` is not in (0, 100]
    kWarnAboveCritical,  ///< warn_percent > critical_percent
  };
  Kind kind = Kind::kOutOfRange;
  std::string_view field;  ///< "warn_percent" or "critical_percent" (kOutOfRange)
  double value = 0;        ///< its value (kOutOfRange)
};

struct PercentThresholds {
  double warn_percent = 85.0;
  double critical_percent = 95.0;

  /// The rule: both in (0, 100] (NaN is not), warn at most critical.
  [[nodiscard]] std::optional<ThresholdViolation> violation() const;
  /// violation() in words that name the fields.
  [[nodiscard]] Result<void> validate() const;
};

}  // namespace headroom
