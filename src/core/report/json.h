#pragma once
// The JSON forms of findings and reports (schema: docs/json.md).

#include <nlohmann/json.hpp>

#include "core/finding.h"

namespace headroom {

/// {"name", "value", "unit"}; "text" holds the human rendering.
[[nodiscard]] nlohmann::ordered_json to_json(const Evidence& evidence);
/// {"id", "subject", "severity", "summary", "evidence", "why", "remedy"[, "reason"]}.
[[nodiscard]] nlohmann::ordered_json to_json(const Finding& finding);
/// The findings of `report` as an array of to_json(Finding) (run's "preflight").
[[nodiscard]] nlohmann::ordered_json findings_to_json(const Report& report);
/// {"verdict", "environment", "findings": [...]}.
[[nodiscard]] nlohmann::ordered_json to_json(const Report& report);

}  // namespace headroom
