#include "core/finding.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/units.h"

namespace headroom {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kOk:
      return "ok";
    case Severity::kUnknown:
      return "unknown";
    case Severity::kWarn:
      return "warn";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

int rank(Severity severity) {
  switch (severity) {
    case Severity::kOk:
      return 0;
    case Severity::kUnknown:
      return 1;
    case Severity::kWarn:
      return 2;
    case Severity::kCritical:
      return 3;
  }
  return 1;
}

std::string format_value(const Evidence& evidence) {
  return std::visit(
      [&](const auto& value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, bool>) {
          return value ? "yes" : "no";
        } else if constexpr (std::is_same_v<T, double>) {
          if (evidence.unit == "percent") return format_percent(value);
          if (evidence.unit == "seconds") {
            return format_duration(std::chrono::seconds(static_cast<std::int64_t>(value)));
          }
          return fmt::format("{:.2f}{}", value, evidence.unit.empty() ? "" : " " + evidence.unit);
        } else {
          if (evidence.unit == "bytes") {
            return value < 0 ? "-" + format_bytes(static_cast<std::uint64_t>(-value))
                             : format_bytes(static_cast<std::uint64_t>(value));
          }
          if (evidence.unit == "seconds") return format_duration(std::chrono::seconds(value));
          if (evidence.unit == "count" || evidence.unit.empty()) return fmt::format("{}", value);
          return fmt::format("{} {}", value, evidence.unit);
        }
      },
      evidence.value);
}

Finding unknown_finding(std::string id, std::string subject, std::string reason) {
  Finding finding;
  finding.id = std::move(id);
  finding.subject = std::move(subject);
  finding.severity = Severity::kUnknown;
  finding.summary = "could not measure: " + reason;
  finding.reason = std::move(reason);
  return finding;
}

Severity Report::verdict() const {
  Severity worst = Severity::kOk;
  for (const Finding& finding : findings) {
    if (finding.severity == Severity::kUnknown) continue;
    if (rank(finding.severity) > rank(worst)) worst = finding.severity;
  }
  return worst;
}

void Report::sort_worst_first() {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return rank(a.severity) > rank(b.severity);
  });
}

}  // namespace headroom
