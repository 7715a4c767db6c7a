#include "core/text_out.h"

#include <fmt/format.h>

#include <algorithm>

namespace headroom {

namespace {

bool is_c0_or_del(unsigned char c) { return c < 0x20 || c == 0x7f; }

/// A C1 control as UTF-8 (0xC2 0x80 to 0xC2 0x9F) at `at`.
bool is_c1(std::string_view text, std::size_t at) {
  return at + 1 < text.size() && static_cast<unsigned char>(text[at]) == 0xc2 &&
         static_cast<unsigned char>(text[at + 1]) >= 0x80 &&
         static_cast<unsigned char>(text[at + 1]) <= 0x9f;
}

}  // namespace

std::string printable(std::string_view text) {
  const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return is_c0_or_del(byte) || byte == 0xc2;
  });
  if (plain) return std::string(text);
  std::string shown;
  shown.reserve(text.size() + 8);
  for (std::size_t at = 0; at < text.size(); ++at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte == '\n') {
      shown += "\\n";
    } else if (byte == '\t') {
      shown += "\\t";
    } else if (is_c0_or_del(byte)) {
      shown += fmt::format("\\x{:02x}", byte);
    } else if (is_c1(text, at)) {
      shown += fmt::format("\\u00{:02x}", static_cast<unsigned char>(text[at + 1]));
      ++at;
    } else {
      shown += text[at];
    }
  }
  return shown;
}

}  // namespace headroom
