#pragma once
// explain's output: one screen for people, one JSON document (docs/json.md, "explain").

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/explain/host.h"
#include "core/report/text.h"
#include "core/signatures/diagnosis.h"

namespace headroom {

/// {"verdict", "candidates", "evidence", "fields", "host", "remedy", "input"}.
[[nodiscard]] nlohmann::ordered_json explain_to_json(const Diagnosis& diagnosis,
                                                     const HostConfirmation& host,
                                                     const std::vector<std::string>& remedy);
/// The cause first, then the proving lines with numbers, the host facts and the fix.
[[nodiscard]] std::string render_explain_text(const Diagnosis& diagnosis,
                                              const HostConfirmation& host,
                                              const std::vector<std::string>& remedy,
                                              const TextStyle& style);

}  // namespace headroom
