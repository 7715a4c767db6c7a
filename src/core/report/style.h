#pragma once
// Colour for people's output: ANSI escapes by severity, only when the front
// end says the stream is a terminal and NO_COLOR is unset. Shared by the
// reports (text.h) and watch's live view, which is why it is its own file:
// headroom-watch links it without the report renderer.

#include <string>
#include <string_view>

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
/// `text` wrapped in the ANSI `color` and a reset when the style has colour.
[[nodiscard]] std::string paint(const TextStyle& style, std::string_view color,
                                const std::string& text);

}  // namespace headroom
