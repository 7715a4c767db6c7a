#pragma once
// Small helpers for the line-oriented pseudo-files the probes parse.

#include <charconv>
#include <cstdint>
#include <optional>
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

/// A plain decimal as the kernel prints it ("12.34": digits, then optionally
/// '.' and digits), or nullopt. Built from integer parses: std::from_chars for
/// double would map 64 KiB more of libstdc++ into the watch daemon, and strtod
/// depends on the locale a Python caller may have set.
inline std::optional<double> parse_decimal(std::string_view text) {
  const auto digits = [](std::string_view part, std::uint64_t& out) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && error == std::errc() && end == part.data() + part.size();
  };
  const std::size_t dot = text.find('.');
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  if (!digits(text.substr(0, dot), whole)) return std::nullopt;
  if (dot == std::string_view::npos) return static_cast<double>(whole);
  const std::string_view decimals = text.substr(dot + 1);
  if (decimals.size() > 18 || !digits(decimals, fraction)) return std::nullopt;
  double scale = 1;
  for (std::size_t i = 0; i < decimals.size(); ++i) scale *= 10;
  return static_cast<double>(whole) + static_cast<double>(fraction) / scale;
}

}  // namespace headroom
