#include "core/thresholds.h"

#include <fmt/format.h>

namespace headroom {

std::optional<ThresholdViolation> PercentThresholds::violation() const {
  for (const auto& [name, value] :
       {std::pair{"warn_percent", warn_percent}, std::pair{"critical_percent", critical_percent}}) {
    if (!(value > 0 && value <= 100)) {
      return ThresholdViolation{ThresholdViolation::Kind::kOutOfRange, name, value};
    }
  }
  if (warn_percent > critical_percent) {
    return ThresholdViolation{ThresholdViolation::Kind::kWarnAboveCritical, {}, 0};
  }
  return std::nullopt;
}

Result<void> PercentThresholds::validate() const {
  const auto broken = violation();
  if (!broken) return {};
  if (broken->kind == ThresholdViolation::Kind::kOutOfRange) {
    return fail(Error::invalid(
        fmt::format("{} must be in (0, 100], got {}", broken->field, broken->value)));
  }
  return fail(Error::invalid(fmt::format("warn_percent ({}) must not exceed critical_percent ({})",
                                         warn_percent, critical_percent)));
}

}  // namespace headroom
