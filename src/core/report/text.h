#pragma once
// The human report: the answer first, worst first, one line per finding, the
// remedy under each problem. Colour only when the caller says the output is a
// terminal and NO_COLOR is unset.

#include <string>

#include "core/finding.h"

namespace headroom {

/// How to render for people.
struct TextStyle {
  bool color = false;
  bool verbose = false;  ///< also evidence of ok findings, and the "why" lines
};

/// ANSI escape for a severity, or "" without colour.
[[nodiscard]] std::string severity_color(Severity severity, const TextStyle& style);
/// The ANSI reset, or "" without colour.
[[nodiscard]] std::string color_reset(const TextStyle& style);

/// Renders a report; ends with a newline.
[[nodiscard]] std::string render_text(const Report& report, const TextStyle& style);
/// Renders one finding (its line, evidence and remedies), as in the report.
[[nodiscard]] std::string render_finding(const Finding& finding, const TextStyle& style);

}  // namespace headroom
