#include "core/report/style.h"

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

}  // namespace headroom
