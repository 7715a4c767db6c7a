#pragma once
// Use% thresholds: one rule for check, watch, run and the Python module. Messages name
// the fields (warn_percent, critical_percent), which are the Python arguments' and the
// watch config's keys; the CLI says its flags instead (cli/check_options.cc).

#include "core/error.h"

namespace headroom {

struct PercentThresholds {
  double warn_percent = 85.0;
  double critical_percent = 95.0;

  /// Both in (0, 100] (NaN is not), warn at most critical.
  [[nodiscard]] Result<void> validate() const;
};

}  // namespace headroom
