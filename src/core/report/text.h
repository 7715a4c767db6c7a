#pragma once
// The human report: the answer first, worst first, one line per finding, the
// remedy under each problem. Colour only when the caller says the output is a
// terminal and NO_COLOR is unset.

#include <string>

#include "core/finding.h"
#include "core/report/style.h"

namespace headroom {

/// Renders a report; ends with a newline.
[[nodiscard]] std::string render_text(const Report& report, const TextStyle& style);
/// Renders one finding (its line, evidence and remedies), as in the report.
[[nodiscard]] std::string render_finding(const Finding& finding, const TextStyle& style);

}  // namespace headroom
