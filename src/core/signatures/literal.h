#pragma once
// The prefilter's literals: the longest run of plain characters every match of
// an RE2 pattern must contain. Derived conservatively from the pattern text.

#include <string>
#include <string_view>

namespace headroom {

/// The longest literal that every match of `pattern` contains, or "" when the
/// pattern has none that can be proven (top-level alternation, case folding).
[[nodiscard]] std::string required_literal(std::string_view pattern);

}  // namespace headroom
