#include "core/series/completeness.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/units.h"

namespace headroom {

namespace {

/// Siblings whose word counts: not being written, not cut short themselves.
bool reliable(const Checkpoint& checkpoint) {
  return !checkpoint.growing && !checkpoint.parsed.temporary && checkpoint.damage.empty();
}

std::uint64_t median(std::vector<std::uint64_t> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

std::string listing(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 4;
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) {
    text += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > kShown) text += fmt::format(" and {} more", names.size() - kShown);
  return text;
}

/// Files most siblings have and `member` lacks.
std::vector<std::string> missing_files(const Checkpoint& member,
                                       const std::vector<const Checkpoint*>& siblings) {
  std::map<std::string, std::size_t> count;
  for (const Checkpoint* sibling : siblings) {
    for (const ContentFile& file : sibling->contents) ++count[file.path];
  }
  std::vector<std::string> missing;
  for (const auto& entry : count) {  // (clang 14 cannot capture a structured binding)
    const std::string& path = entry.first;
    if (2 * entry.second <= siblings.size()) continue;  // not what most of them have
    const bool has = std::any_of(member.contents.begin(), member.contents.end(),
                                 [&](const ContentFile& file) { return file.path == path; });
    if (!has) missing.push_back(path);
  }
  return missing;
}

}  // namespace

std::vector<std::string> judge_completeness(const std::vector<Checkpoint>& checkpoints,
                                            const std::vector<std::size_t>& series) {
  std::optional<std::uint64_t> latest;  // the order DeepSpeed's `latest` names
  std::string latest_name;
  for (std::size_t index : series) {
    const Checkpoint& checkpoint = checkpoints[index];
    if (checkpoint.latest_marker && checkpoint.parsed.order()) {
      latest = checkpoint.parsed.order();
      latest_name = checkpoint.name;
    }
  }
  std::vector<std::string> reasons;
  for (std::size_t index : series) {
    const Checkpoint& member = checkpoints[index];
    std::vector<const Checkpoint*> siblings;
    for (std::size_t other : series) {
      if (other != index && reliable(checkpoints[other])) siblings.push_back(&checkpoints[other]);
    }
    std::string why;
    if (!member.damage.empty()) {
      why = "cut short: " + member.damage;
    } else if (latest && member.parsed.order() && *member.parsed.order() > *latest) {
      why = fmt::format(
          "newer than {}, which DeepSpeed's 'latest' names (it is written once every rank has "
          "saved)",
          latest_name);
    } else if (!siblings.empty()) {
      std::vector<std::string> missing;
      if (member.directory) missing = missing_files(member, siblings);
      std::vector<std::uint64_t> sizes;
      for (const Checkpoint* sibling : siblings) sizes.push_back(sibling->tally.apparent_bytes);
      const std::uint64_t typical = median(sizes);
      if (!missing.empty()) {
        why =
            fmt::format("lacks {} that its {} sibling(s) have", listing(missing), siblings.size());
      } else if (static_cast<double>(member.tally.apparent_bytes) <
                 kIncompleteSizeShare * static_cast<double>(typical)) {
        why = fmt::format("holds {} where its siblings hold {} (median)",
                          format_bytes(member.tally.apparent_bytes), format_bytes(typical));
      }
    }
    reasons.push_back(std::move(why));
  }
  return reasons;
}

}  // namespace headroom
