#pragma once
// Pressure stall information: /proc/pressure/{memory,cpu,io} and the cgroup v2
// <cgroup>/memory.pressure, which has the same format.
// Format: Documentation/accounting/psi.rst:
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
// Quirks: PSI exists since Linux 4.20 and only with CONFIG_PSI (and not psi=0 on
// the kernel command line: then reading fails with EOPNOTSUPP); the cpu file
// has no "full" line before 5.13; total is in microseconds.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// One line of a PSI file: share of wall time stalled, in percent, over 10 s, 60 s, 300 s.
struct PressureLine {
  double avg10 = 0;
  double avg60 = 0;
  double avg300 = 0;
  std::uint64_t total_us = 0;  ///< total stall time since boot, microseconds
};

/// "some": at least one task stalled; "full": all non-idle tasks stalled at once.
struct Pressure {
  PressureLine some;
  std::optional<PressureLine> full;
};

/// Parses a PSI file; a missing "some" line or a malformed value is an Error.
[[nodiscard]] Result<Pressure> parse_pressure(std::string_view text);
/// Reads <root>/proc/pressure/<resource> ("memory", "cpu", "io"). kNotFound or
/// kUnsupported when the kernel has no PSI: callers treat that as "no evidence".
[[nodiscard]] Result<Pressure> read_pressure(const Context& context,
                                             std::string_view resource = "memory");

}  // namespace headroom
