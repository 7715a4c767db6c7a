#pragma once
// Small helpers for the line-oriented pseudo-files the probes parse.

#include <string_view>

namespace headroom {

/// Removes the first line (without its '\n') from `text` and returns it.
inline std::string_view next_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

/// `text` without leading and trailing blanks (spaces, tabs, '\r', '\n').
inline std::string_view trim_blanks(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace headroom
