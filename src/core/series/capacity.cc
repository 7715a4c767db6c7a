#include "core/series/capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.h"

namespace headroom {

namespace {

/// Bytes retention frees when it keeps the newest `keep` complete members (keep 0: all).
/// Incomplete members older than the newest complete one go too; newer ones stay.
std::uint64_t retain(std::vector<SeriesMember>& members, std::size_t keep) {
  if (keep == 0) return 0;
  std::uint64_t freed = 0;
  std::size_t complete_seen = 0;
  std::vector<SeriesMember> kept;
  for (const SeriesMember& member : members) {
    const bool keep_it =
        member.pinned || (member.complete ? complete_seen < keep : complete_seen == 0);
    if (member.complete) ++complete_seen;
    if (keep_it) {
      kept.push_back(member);
    } else {
      freed += member.bytes;
    }
  }
  members.swap(kept);
  return freed;
}

std::uint64_t total(const std::vector<SeriesMember>& members) {
  std::uint64_t bytes = 0;
  for (const SeriesMember& member : members) bytes += member.bytes;
  return bytes;
}

}  // namespace

std::uint64_t save_need_bytes(std::uint64_t bytes) {
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(bytes) * 1.05)) + kMiB;
}

Severity Capacity::severity() const {
  if (saves && *saves == 0) return Severity::kCritical;
  if (saves || frees_first) return Severity::kWarn;
  return Severity::kOk;
}

Capacity plan_capacity(const CapacityInput& input) {
  Capacity result;
  result.need_bytes = save_need_bytes(input.checkpoint_bytes);
  // A save caught in progress is the next save: what it wrote is room for it.
  std::uint64_t avail =
      input.avail_bytes + input.series.reclaimable_bytes + input.series.saving_bytes;
  std::vector<SeriesMember> members = input.series.members;
  // What may go before the next save: retention of the newest max(keep-1, 1).
  {
    std::vector<SeriesMember> trial = members;
    result.room_bytes = avail + retain(trial, std::max<std::size_t>(input.keep, 2) - 1);
    if (input.keep == 0) result.room_bytes = avail;
  }
  if (input.checkpoint_bytes == 0) return result;
  if (input.keep == 0) {
    // Nothing is ever removed: each save takes its bytes until the margin no longer fits.
    result.saves =
        avail < result.need_bytes ? 0 : (avail - result.need_bytes) / input.checkpoint_bytes + 1;
    return result;
  }
  // After `keep` saves the series holds only new checkpoints and each further save
  // repeats the same state: two more saves past that prove the steady state.
  const std::size_t rounds = input.keep + members.size() + 2;
  for (std::size_t save = 0; save < rounds; ++save) {
    // Whether the steady state (the last round) needs the oldest deleted first.
    result.frees_first = false;
    if (avail < result.need_bytes) {
      avail += retain(members, std::max<std::size_t>(input.keep, 2) - 1);
      if (avail < result.need_bytes) {
        result.saves = save;
        return result;
      }
      result.frees_first = true;
    }
    avail -= input.checkpoint_bytes;
    members.insert(members.begin(), SeriesMember{input.checkpoint_bytes, true, false});
    result.peak_bytes = std::max(result.peak_bytes, total(members));
    avail += retain(members, input.keep);
  }
  return result;
}

std::string capacity_summary(const std::string& dir, const CapacityInput& input,
                             const Capacity& capacity) {
  const std::string size = format_bytes(input.checkpoint_bytes);
  const std::string series =
      input.series.name.empty() ? "" : fmt::format(" of {}", input.series.name);
  const std::string keep = input.keep == 0 ? "keeping all" : fmt::format("keeping {}", input.keep);
  const std::uint64_t avail = input.avail_bytes;
  const std::uint64_t saving = input.series.saving_bytes;
  const std::uint64_t freed =
      capacity.room_bytes > avail + saving ? capacity.room_bytes - avail - saving : 0;
  std::string room = fmt::format("{} free", format_bytes(avail));
  if (saving > 0) room += fmt::format(" + {} the save in progress wrote", format_bytes(saving));
  if (freed > 0) room += fmt::format(" + {} that retention frees first", format_bytes(freed));
  if (capacity.saves && *capacity.saves == 0) {
    return fmt::format("{}: the next checkpoint{} ({}, {} with margin) does not fit: {}", dir,
                       series, size, format_bytes(capacity.need_bytes), room);
  }
  if (capacity.saves) {
    return fmt::format("{}: room for {} more checkpoint(s){} of {} ({}, {}), then save {} fails",
                       dir, *capacity.saves, series, size, room, keep, *capacity.saves + 1);
  }
  if (capacity.frees_first) {
    return fmt::format(
        "{}: every checkpoint{} of {} fits ({}) only because the oldest is deleted before each "
        "save, as headroom.save_checkpoint does: writing first and deleting after needs {} x {}",
        dir, series, size, keep, input.keep + 1, size);
  }
  return fmt::format("{}: every checkpoint{} of {} fits ({}, {})", dir, series, size, room, keep);
}

}  // namespace headroom
