#pragma once
// How `headroom who` shows its answer: the human report and the JSON document (schema in
// docs/json.md, "headroom who --json").

#include <nlohmann/json.hpp>
#include <string>

#include "core/inuse/who.h"
#include "core/report/style.h"

namespace headroom {

/// The JSON document of `headroom who --json` (docs/json.md).
[[nodiscard]] nlohmann::ordered_json who_to_json(const WhoAnswer& answer);

/// The text report: per path a headline and a table of holders, then what could not be
/// seen (`as_root`: the caller is root, so "run as root" is not advised).
[[nodiscard]] std::string render_who_text(const WhoAnswer& answer, const TextStyle& style,
                                          bool as_root);

}  // namespace headroom
