#include "core/thresholds.h"

#include <fmt/format.h>

namespace headroom {

Result<void> PercentThresholds::validate() const {
  for (const auto& [name, value] :
       {std::pair{"warn_percent", warn_percent}, std::pair{"critical_percent", critical_percent}}) {
    if (!(value > 0 && value <= 100)) {
      return fail(Error::invalid(fmt::format("{} must be in (0, 100], got {}", name, value)));
    }
  }
  if (warn_percent > critical_percent) {
    return fail(
        Error::invalid(fmt::format("warn_percent ({}) must not exceed critical_percent ({})",
                                   warn_percent, critical_percent)));
  }
  return {};
}

}  // namespace headroom
