// /proc/meminfo reader; see meminfo.h for the format and its quirks.

#include "core/kernel/meminfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "core/kernel/text.h"
#include "core/units.h"

namespace headroom {

std::optional<std::uint64_t> Meminfo::field(std::string_view name) const {
  for (auto line = fields.rbegin(); line != fields.rend(); ++line) {
    if (line->first == name) return line->second;
  }
  return std::nullopt;
}

namespace {

/// The lines Meminfo names, in the kernel's order (meminfo_proc_show).
constexpr std::array<std::string_view, 8> kNamed = {
    "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapTotal", "SwapFree", "Shmem"};

}  // namespace

Result<Meminfo> parse_meminfo(std::string_view text, MeminfoFields which) {
  Meminfo info;
  const bool every = which == MeminfoFields::kAll;
  if (every) info.fields.reserve(64);  // 50-60 lines on kernels of 2020-2026
  std::array<std::optional<std::uint64_t>, kNamed.size()> named;
  std::size_t named_seen = 0;
  std::size_t line_number = 0;
  while (!text.empty() && (every || named_seen < named.size())) {
    const std::string_view line = next_line(text);
    ++line_number;
    if (trim_blanks(line).empty()) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return fail(Error::parse(fmt::format("meminfo:{}: missing ':'", line_number)));
    }
    const std::string_view key = trim_blanks(line.substr(0, colon));
    const auto slot = std::find(kNamed.begin(), kNamed.end(), key);
    if (!every && slot == kNamed.end()) continue;
    std::string_view rest = trim_blanks(line.substr(colon + 1));
    std::uint64_t value = 0;
    const auto [next, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc()) {
      return fail(Error::parse(fmt::format("meminfo:{}: bad value for {}", line_number, key)));
    }
    rest = trim_blanks(rest.substr(static_cast<std::size_t>(next - rest.data())));
    // Only "kB" occurs today; it has always meant KiB.
    if (rest == "kB") value *= kKiB;
    if (slot != kNamed.end()) {
      auto& kept = named[static_cast<std::size_t>(slot - kNamed.begin())];
      named_seen += kept ? std::size_t{0} : std::size_t{1};
      kept = value;
    }
    if (every) info.fields.emplace_back(key, value);
  }
  const auto field = [&](std::string_view name) {
    return named[static_cast<std::size_t>(std::find(kNamed.begin(), kNamed.end(), name) -
                                          kNamed.begin())];
  };
  const auto total = field("MemTotal");
  if (!total) return fail(Error::parse("meminfo: no MemTotal line"));
  info.total_bytes = *total;
  info.free_bytes = field("MemFree").value_or(0);
  if (const auto available = field("MemAvailable")) {
    info.available_bytes = *available;
  } else {
    // Before 3.14 free(1) computed this; it counts unreclaimable cache too.
    info.available_bytes =
        info.free_bytes + field("Buffers").value_or(0) + field("Cached").value_or(0);
    info.available_estimated = true;
  }
  info.swap_total_bytes = field("SwapTotal").value_or(0);
  info.swap_free_bytes = field("SwapFree").value_or(0);
  info.shmem_bytes = field("Shmem").value_or(0);
  return info;
}

Result<Meminfo> read_meminfo(const Context& context, MeminfoFields which) {
  const std::filesystem::path path = context.root.proc("meminfo");
  auto text = context.root.read(path, std::size_t{1} << 20, FileEnd::kShortRead);
  if (!text) return fail(text.error());
  auto info = parse_meminfo(*text, which);
  if (!info) {
    return fail(Error::parse(context.root.display(path).string() + ": " + info.error().message));
  }
  return info;
}

}  // namespace headroom
