#pragma once
// Line normalisation: what is left of a raw log line for matching and display
// after the noise of terminals, launchers and log collectors is removed.

#include <string>
#include <string_view>

namespace headroom {

/// The carriage-return segment of `raw` that contains byte `at` (tqdm redraws a
/// progress bar with '\r', so one "line" holds many screens; the message that
/// matters is the segment where the literal was found). A trailing '\r' (CRLF) is dropped.
[[nodiscard]] std::string_view cr_segment(std::string_view raw, std::size_t at);

/// Removes ANSI escape sequences (CSI and OSC) and NUL bytes.
[[nodiscard]] std::string strip_terminal(std::string_view text);

/// Drops the prefixes launchers and collectors put before a message: ISO and
/// syslog timestamps, "[2024-05-01 10:00:00,123]", dmesg's "[  12.345678]",
/// torchrun's "[rank3]:" and "[default0]:", kubectl's "pod/name container " and
/// "name-7d9f | ". Returns the rest of the line.
[[nodiscard]] std::string_view strip_prefixes(std::string_view text);

/// Replaces bytes that are not valid UTF-8 with '?', and cuts at `limit` bytes
/// (on a character boundary), so the text can go into JSON.
[[nodiscard]] std::string printable_utf8(std::string_view text, std::size_t limit);

/// cr_segment, strip_terminal and strip_prefixes in order: the text patterns see.
[[nodiscard]] std::string normalize_line(std::string_view raw, std::size_t at);

}  // namespace headroom
