#include "core/units.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace headroom {

namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits "1.5GiB" into 1.5 and "gib". Fails on anything but digits and one dot first.
Result<std::pair<double, std::string>> split_number(std::string_view text, std::string_view what) {
  const std::string_view original = text;
  text = trim(text);
  std::size_t end = 0;
  bool seen_dot = false;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || (text[end] == '.' && !seen_dot))) {
    seen_dot = seen_dot || text[end] == '.';
    ++end;
  }
  if (end == 0 || (end == 1 && text[0] == '.')) {
    return fail(Error::invalid(
        fmt::format("invalid {} '{}': expected a number{}", what, original,
                    !text.empty() && text[0] == '-' ? " (negative values are not allowed)" : "")));
  }
  double value = 0;
  const std::string number(text.substr(0, end));
  try {
    value = std::stod(number);
  } catch (...) {
    return fail(Error::invalid(fmt::format("invalid {} '{}'", what, original)));
  }
  return std::pair<double, std::string>{value, lower(trim(text.substr(end)))};
}

}  // namespace

Result<std::uint64_t> parse_size(std::string_view text) {
  auto split = split_number(text, "size");
  if (!split) return fail(split.error());
  const auto& [value, unit] = *split;
  struct Suffix {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Suffix, 17> kSuffixes{{
      {"", 1.0},
      {"b", 1.0},
      {"k", 1024.0},
      {"kb", 1e3},
      {"kib", 1024.0},
      {"m", 1048576.0},
      {"mb", 1e6},
      {"mib", 1048576.0},
      {"g", 1073741824.0},
      {"gb", 1e9},
      {"gib", 1073741824.0},
      {"t", 1099511627776.0},
      {"tb", 1e12},
      {"tib", 1099511627776.0},
      {"p", 1125899906842624.0},
      {"pb", 1e15},
      {"pib", 1125899906842624.0},
  }};
  for (const Suffix& suffix : kSuffixes) {
    if (unit == suffix.name) {
      const double bytes = std::ceil(value * suffix.factor);
      if (bytes > 1.8e19) return fail(Error::invalid(fmt::format("size '{}' is too large", text)));
      return static_cast<std::uint64_t>(bytes);
    }
  }
  return fail(Error::invalid(fmt::format(
      "invalid size '{}': unknown unit '{}' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", text,
      unit)));
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const std::string_view original = text;
  text = trim(text);
  if (text.empty()) return fail(Error::invalid("invalid duration '': expected e.g. 5s, 10m, 1h"));
  double total_ms = 0;
  while (!text.empty()) {
    auto split = split_number(text, "duration");
    if (!split) return fail(split.error());
    // split_number lower-cases the whole remainder; take the unit letters only.
    std::size_t consumed = 0;
    while (consumed < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[consumed])) || text[consumed] == '.')) {
      ++consumed;
    }
    std::size_t unit_end = consumed;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) {
      ++unit_end;
    }
    const std::string unit = lower(text.substr(consumed, unit_end - consumed));
    double factor = 0;
    if (unit.empty() || unit == "s" || unit == "sec") {
      factor = 1000;
    } else if (unit == "ms") {
      factor = 1;
    } else if (unit == "m" || unit == "min") {
      factor = 60'000;
    } else if (unit == "h") {
      factor = 3'600'000;
    } else if (unit == "d") {
      factor = 86'400'000;
    } else {
      return fail(Error::invalid(fmt::format(
          "invalid duration '{}': unknown unit '{}' (use ms, s, m, h, d)", original, unit)));
    }
    total_ms += split->first * factor;
    text = trim(text.substr(unit_end));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(total_ms)));
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string format_docker_size(std::uint64_t bytes) {
  if (bytes >= 8 * kGiB) return fmt::format("{}g", (bytes + kGiB - 1) / kGiB);
  return fmt::format("{}m", (bytes + kMiB - 1) / kMiB);
}

std::string format_k8s_quantity(std::uint64_t bytes) {
  if (bytes >= 8 * kGiB) return fmt::format("{}Gi", (bytes + kGiB - 1) / kGiB);
  return fmt::format("{}Mi", (bytes + kMiB - 1) / kMiB);
}

std::string format_duration(std::chrono::seconds duration) {
  std::int64_t seconds = duration.count();
  if (seconds < 0) seconds = 0;
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m {}s", seconds / 60, seconds % 60);
  if (seconds < 86400) return fmt::format("{}h {}m", seconds / 3600, (seconds % 3600) / 60);
  return fmt::format("{}d {}h", seconds / 86400, (seconds % 86400) / 3600);
}

std::string format_setting(std::chrono::milliseconds duration) {
  if (duration.count() == 0) return "0s";
  if (duration.count() < 0 || duration.count() % 1000 != 0) {
    return fmt::format("{}ms", duration.count());
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(duration).count();
  if (seconds % 3600 == 0) return fmt::format("{}h", seconds / 3600);
  if (seconds % 60 == 0) return fmt::format("{}m", seconds / 60);
  return format_duration(std::chrono::seconds(seconds));
}

std::string format_percent(double percent) { return fmt::format("{:.1f}%", percent); }

std::string format_count(std::uint64_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

std::string format_age(std::int64_t now_ns, std::int64_t then_ns) {
  if (then_ns <= 0) return "-";
  const std::int64_t seconds = (now_ns - then_ns) / 1'000'000'000;
  if (seconds < 0) return "in future";
  if (seconds < 60) return fmt::format("{}s ago", seconds);
  if (seconds < 3600) return fmt::format("{}m ago", seconds / 60);
  if (seconds < 86400 * 2) return fmt::format("{}h ago", seconds / 3600);
  return fmt::format("{}d ago", seconds / 86400);
}

std::string format_count(std::uint64_t count) {
  const std::string digits = std::to_string(count);
  std::string grouped;
  grouped.reserve(digits.size() + digits.size() / 3);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped.push_back(',');
    grouped.push_back(digits[i]);
  }
  return grouped;
}

}  // namespace headroom
