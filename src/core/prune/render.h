#pragma once
// How `headroom prune` shows its plan or outcome: the human text and the JSON document
// (schema in docs/json.md, "headroom prune --json").

#include <nlohmann/json.hpp>
#include <string>

#include "core/prune/prune.h"
#include "core/report/style.h"

namespace headroom {

/// The plan (or the outcome) for people, answer first; ends with a newline.
[[nodiscard]] std::string render_prune_text(const PruneResult& result, const TextStyle& style);
/// The documented JSON document (docs/json.md, "headroom prune --json").
[[nodiscard]] nlohmann::ordered_json prune_to_json(const PruneResult& result);

}  // namespace headroom
