#include "core/report/style.h"

#include <fmt/format.h>

namespace headroom {

std::string severity_color(Severity severity, const TextStyle& style) {
  if (!style.color) return "";
  switch (severity) {
    case Severity::kOk:
      return "\x1b[32m";
    case Severity::kUnknown:
      return "\x1b[2m";
    case Severity::kWarn:
      return "\x1b[33m";
    case Severity::kCritical:
      return "\x1b[1;31m";
  }
  return "";
}

std::string color_reset(const TextStyle& style) { return style.color ? "\x1b[0m" : ""; }

std::string paint(const TextStyle& style, std::string_view color, const std::string& text) {
  if (!style.color) return text;
  return fmt::format("{}{}{}", color, text, "\033[0m");
}

}  // namespace headroom
