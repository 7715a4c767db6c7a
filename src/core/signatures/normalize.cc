#include "core/signatures/normalize.h"

#include <re2/re2.h>

#include "core/signatures/envelope.h"

namespace headroom {

std::string_view cr_segment(std::string_view raw, std::size_t at) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  if (at > raw.size()) at = raw.size();
  const std::size_t begin_cr = at == 0 ? std::string_view::npos : raw.rfind('\r', at - 1);
  const std::size_t begin = begin_cr == std::string_view::npos ? 0 : begin_cr + 1;
  const std::size_t end_cr = raw.find('\r', at);
  const std::size_t end = end_cr == std::string_view::npos ? raw.size() : end_cr;
  return raw.substr(begin, end - begin);
}

std::string strip_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') continue;
    if (c != '\x1b') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '[') {  // CSI: ESC [ params final(0x40-0x7e)
      std::size_t j = i + 2;
      while (j < text.size() && (static_cast<unsigned char>(text[j]) < 0x40 ||
                                 static_cast<unsigned char>(text[j]) > 0x7e)) {
        ++j;
      }
      i = j;
    } else if (i + 1 < text.size() && text[i + 1] == ']') {  // OSC: ends with BEL or ESC backslash
      std::size_t j = i + 2;
      while (j < text.size() && text[j] != '\a' &&
             !(text[j] == '\x1b' && j + 1 < text.size() && text[j + 1] == '\\'))
        ++j;
      i = j < text.size() && text[j] == '\x1b' ? j + 1 : j;
    } else {
      ++i;  // a two-byte escape such as ESC ( B
    }
  }
  return out;
}

std::string_view strip_prefixes(std::string_view text) {
  // Applied repeatedly: "2024-05-01T10:00:00Z [rank3]: [default0]: msg" has three.
  static const RE2 kPrefix(
      "^((?:\\s*(?:"
      R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:?\d\d [\w.-]+ [\w./-]+(?:\[\d+\])?:\s)"  // journalctl -o short-iso
      R"(|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z (?:\|\s*)?)"  // kubectl logs --timestamps: one
                                                                  // space, indentation stays
      R"(|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s*(?:\|\s*)?)"  // ISO
      R"(|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: [\w.-]+ [\w./-]+(?:\[\d+\])?:)?\s)"  // syslog
      R"(|\[\s*\d+\.\d+\]\s?)"                                                         // dmesg
      R"(|\[\d{4}-\d\d-\d\d[^\]]{0,40}\]\s*)"                   // [2024-05-01 ...]
      R"(|\[(?:rank|default|RANK )?\d+\]:\s?)"                  // [rank3]:
      R"(|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s*\|\s*)"  // LEVEL |
      R"(|pod/[\w.-]+(?:/[\w.-]+)?\s+)"                         // kubectl logs --prefix (old)
      R"(|\[pod/[\w.-]+/[\w.-]+\]\s+)"                          // kubectl logs --prefix
      R"(|[\w.-]+-\w+\s+\|\s)"                                  // docker compose "name-1 | "
      R"(|(?:stdout|stderr) [FP] )"                             // CRI log file (/var/log/pods)
      R"(|\{"log":")"  // a docker json-file record cut short (not valid JSON)
      R"(|\((?:[^\s=]+ )?pid=\d+(?:, ip=[\d.]+)?\)\s|\(raylet(?:, ip=[\d.]+)?\)\s)"  // Ray "(Actor
                                                                                     // pid=1,
                                                                                     // ip=..) "
      R"(|\d+:\s)"                     // srun -l "3: "
      R"(|>+\s?|[-*\x{2022}]\s+|`+))"  // a paste: quote marks, bullets, backticks
      ")+)",
      RE2::Quiet);
  re2::StringPiece input(text.data(), text.size());
  re2::StringPiece match;
  if (RE2::PartialMatch(input, kPrefix, &match) && match.data() == text.data()) {
    text.remove_prefix(match.size());
  }
  return text;
}

std::string printable_utf8(std::string_view text, std::size_t limit) {
  std::string out;
  out.reserve(std::min(text.size(), limit));
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    if (c < 0x80)
      length = 1;
    else if ((c & 0xE0) == 0xC0 && c >= 0xC2)
      length = 2;
    else if ((c & 0xF0) == 0xE0)
      length = 3;
    else if ((c & 0xF8) == 0xF0 && c <= 0xF4)
      length = 4;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (!valid) length = 1;
    if (out.size() + length > limit) {
      out += "...";
      break;
    }
    if (!valid) {
      out.push_back('?');
    } else if (c < 0x20 && c != '\t') {
      out.push_back(' ');  // control characters left after stripping
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

namespace {

/// The `index`th '\r'-separated segment of `text` (the last one if there are fewer).
std::string_view nth_cr_segment(std::string_view text, std::size_t index) {
  std::size_t begin = 0;
  for (; index > 0; --index) {
    const std::size_t cr = text.find('\r', begin);
    if (cr == std::string_view::npos) break;
    begin = cr + 1;
  }
  const std::size_t end = text.find('\r', begin);
  return text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

/// How many escaped carriage returns ("\\r") the JSON text `raw` has before byte `at`:
/// which redrawn segment of the decoded text holds the hit. Every backslash in JSON
/// text starts an escape, so skipping the escaped character is enough.
std::size_t escaped_crs_before(std::string_view raw, std::size_t at) {
  std::size_t count = 0;
  for (std::size_t i = 0; i + 1 < std::min(at, raw.size()); ++i) {
    if (raw[i] != '\\') continue;
    if (raw[i + 1] == 'r') ++count;
    ++i;
  }
  return count;
}

}  // namespace

std::string normalize_line(std::string_view raw, std::size_t at) {
  if (looks_like_docker_json(raw)) {
    // A docker json-file record in a log that did not start as one (EnvelopeDecoder
    // decodes whole json-file logs before the scan): the text is the decoded "log".
    if (std::optional<DockerRecord> record = parse_docker_json(raw)) {
      std::string_view text = record->log;
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
      const std::string clean = strip_terminal(nth_cr_segment(text, escaped_crs_before(raw, at)));
      return std::string(strip_prefixes(clean));
    }
  }
  const std::string clean = strip_terminal(cr_segment(raw, at));
  return std::string(strip_prefixes(clean));
}

}  // namespace headroom
