#pragma once
// How `headroom du` shows its answer: the human table and the JSON document
// (schema in docs/json.md, "headroom du --json").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/du/du.h"
#include "core/report/style.h"

namespace headroom {

/// The total first, then the table, then what was skipped; ends with a newline.
[[nodiscard]] std::string render_du_text(const DuReport& report, const TextStyle& style);
/// The documented JSON document.
[[nodiscard]] nlohmann::ordered_json du_to_json(const DuReport& report);

}  // namespace headroom
