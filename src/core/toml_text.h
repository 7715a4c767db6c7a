#pragma once
// TOML forbids control characters other than tab, LF and CR anywhere in a document. They are
// refused here, before toml++ sees them: Debian's toml++ 3.3 asserts (debug builds) or
// assumes (clang release builds) that a table header's key starts with a key character, and
// a control character there breaks that (found by fuzzing the catalog parser).

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// Where a forbidden control character is, and which.
struct TomlControlCharacter {
  std::size_t line = 1;
  std::size_t column = 1;
  unsigned byte = 0;
  [[nodiscard]] std::string describe() const {
    return fmt::format("control character 0x{:02x} (not allowed in TOML)", byte);
  }
};

/// The first control character TOML forbids in `text` (all but tab, LF and CR), if any.
[[nodiscard]] inline std::optional<TomlControlCharacter> find_toml_control(std::string_view text) {
  TomlControlCharacter at;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t' && c != '\n' && c != '\r') || byte == 0x7f) {
      at.byte = byte;
      return at;
    }
    if (c == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return std::nullopt;
}

}  // namespace headroom
