#pragma once
// Text that leaves headroom carrying names it did not choose: file names, command lines and
// log lines come from other users and other programs, in any bytes.
//
// - JSON must be valid UTF-8: a Latin-1 file name would make nlohmann's dump() throw, and a
//   `--json` run end in an internal error. json_text() writes each byte that is not UTF-8 as
//   U+FFFD, as jq and Python's "replace" do.
// - A terminal obeys the control characters it is sent: a file named "\e]2;...\a" or
//   "\e[2J" could retitle, clear or rewrite the screen of whoever lists it. printable()
//   shows them as \n, \t or \xNN, as GNU ls's escape style does; every other byte is kept
//   (a backslash too: the escapes are there to be read, not pasted back).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace headroom {

/// `value` (nlohmann::json or ordered_json: its keys keep their order) as JSON text (`indent`
/// as nlohmann's dump; -1: one line), any invalid UTF-8 in its strings replaced by U+FFFD.
/// Never throws for bad bytes.
template <typename Json>
[[nodiscard]] std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// `text` with its C0 control characters, DEL and C1 controls (U+0080-U+009F) written as
/// escapes ("\n", "\t", "\x1b", "\u009b"), so a name shown cannot move the cursor, retitle
/// the window or pose as another line.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace headroom
