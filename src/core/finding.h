#pragma once
// What a check reports: findings with a stable id, a severity, measured
// evidence and remedies. The JSON form is documented in docs/json.md.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom {

/// How bad a finding is. kUnknown means it could not be measured (the reason says why).
enum class Severity { kOk, kUnknown, kWarn, kCritical };

/// "ok", "unknown", "warn", "critical".
[[nodiscard]] std::string_view to_string(Severity severity);
/// Orders severities for "worst first": critical > warn > unknown > ok.
[[nodiscard]] int rank(Severity severity);

/// One measured number (or fact) behind a finding, with its unit.
struct Evidence {
  using Value = std::variant<std::uint64_t, std::int64_t, double, bool, std::string>;
  std::string name;  ///< snake_case, e.g. "shm_size_bytes"
  Value value;
  std::string unit;  ///< "bytes", "inodes", "percent", "seconds", "count", "" for facts
};

/// Renders evidence for people: bytes as "64.0 MiB", seconds as "3h 20m".
[[nodiscard]] std::string format_value(const Evidence& evidence);

/// One result of one check.
struct Finding {
  std::string id;       ///< stable, e.g. "shm.capacity"
  std::string subject;  ///< what it is about, e.g. "/dev/shm" or a --dir path; may be empty
  Severity severity = Severity::kOk;
  std::string summary;  ///< one line for people
  std::vector<Evidence> evidence;
  std::string why;                  ///< why it matters for training
  std::vector<std::string> remedy;  ///< exact commands or steps, for the detected environment
  std::string reason;               ///< why it could not be measured, when kUnknown

  Finding& add(std::string name, Evidence::Value value, std::string unit = "") {
    evidence.push_back({std::move(name), std::move(value), std::move(unit)});
    return *this;
  }
};

/// Builds an unknown finding with its reason.
[[nodiscard]] Finding unknown_finding(std::string id, std::string subject, std::string reason);

/// All findings of a run, and the verdict they add up to.
struct Report {
  std::vector<Finding> findings;
  std::string environment;  ///< "host", "docker", "kubernetes", "slurm", ...

  /// The worst of ok / warn / critical over all findings (unknown counts as ok).
  [[nodiscard]] Severity verdict() const;
  /// Findings sorted worst first, stable within a severity.
  void sort_worst_first();
};

}  // namespace headroom
