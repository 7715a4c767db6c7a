#pragma once
// How `headroom du` shows its answer: the human table and the JSON document
// (schema in docs/json.md, "headroom du --json").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/du/du.h"
#include "core/report/text.h"

namespace headroom {

/// `text` wrapped in the ANSI `color` and a reset when the style has colour.
[[nodiscard]] std::string paint(const TextStyle& style, std::string_view color,
                                const std::string& text);

/// "45s ago", "12m ago", "3h ago", "5d ago"; "in the future" for clock skew.
[[nodiscard]] std::string format_age(std::int64_t now_ns, std::int64_t then_ns);
/// 1234567 -> "1,234,567".
[[nodiscard]] std::string format_count(std::uint64_t count);
/// The total first, then the table, then what was skipped; ends with a newline.
[[nodiscard]] std::string render_du_text(const DuReport& report, const TextStyle& style);
/// The documented JSON document.
[[nodiscard]] nlohmann::ordered_json du_to_json(const DuReport& report);

}  // namespace headroom
