#pragma once
// The post-mortem for people (a few lines on stderr) and as JSON
// (`headroom run --report FILE`, schema in docs/json.md, "run").

#include <nlohmann/json.hpp>
#include <string>

#include "core/postmortem/postmortem.h"
#include "core/report/text.h"

namespace headroom {

/// The verdict first, then the evidence and the fix; ends with a newline.
[[nodiscard]] std::string render_postmortem(const Postmortem& postmortem, const TextStyle& style);

/// {"command", "exit_code", "signal", "verdict": {...}, "process", "exits", "log", ...}.
[[nodiscard]] nlohmann::ordered_json postmortem_to_json(const Postmortem& postmortem,
                                                        const SupervisionResult& run,
                                                        const std::vector<std::string>& command);

}  // namespace headroom
