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

/// `run --json`: the --report document of every run (a successful one too) with the
/// preflight's findings (null when it did not run) and the live warnings, on one line of
/// its own (after a newline when the job's last line to stderr was open).
[[nodiscard]] std::string run_to_json_line(const Postmortem& postmortem,
                                           const SupervisionResult& run,
                                           const std::vector<std::string>& command,
                                           const Report* preflight);

/// What a reader of headroom's output did not take, one line each, never dropped silently;
/// `log_path`: where --log kept a complete copy ("" when not asked). "" when nothing was lost.
[[nodiscard]] std::string render_output_notices(const SupervisionResult& run,
                                                const std::string& log_path);

}  // namespace headroom
