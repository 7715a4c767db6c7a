#pragma once
// Will the next checkpoint fit? One rule for `check` (disk.space), the watch
// rule checkpoint_space (so `watch`, `run` and the Python Monitor) and
// headroom.save_checkpoint: the room for the next save is the free space plus
// what retention will free, simulated save by save the way save_checkpoint
// works: write when the save fits with its margin; when it does not, first
// delete the series' older checkpoints beyond the newest max(keep-1, 1) (the ones
// retention removes after this save anyway, never the last complete one), and
// only then give up; after each save, retention keeps the newest `keep`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/finding.h"

namespace headroom {

/// Free space a save of `bytes` asks for before it starts: 5% and 1 MiB more (zip
/// records and pickled objects beyond the tensor bytes).
[[nodiscard]] std::uint64_t save_need_bytes(std::uint64_t bytes);

/// One checkpoint of the series the job saves into.
struct SeriesMember {
  std::uint64_t bytes = 0;  ///< on disk
  bool complete = true;     ///< counts towards keep (completeness.h)
  bool pinned = false;      ///< retention never removes it (named by a symlink, in use, ...)
};

/// The series the job saves into, as it is on disk now.
struct SeriesOnDisk {
  std::string name;                     ///< its template, e.g. "step_{N}.pt"; empty: none yet
  std::vector<SeriesMember> members;    ///< newest first
  std::uint64_t reclaimable_bytes = 0;  ///< temps of dead saves, removed by the next save
  /// Written so far by a save of the series in progress: that save is the next one, and
  /// these bytes are already its own (0 for the saver asking before it writes).
  std::uint64_t saving_bytes = 0;
};

/// What the rule needs.
struct CapacityInput {
  std::uint64_t avail_bytes = 0;
  std::uint64_t checkpoint_bytes = 0;  ///< the size of each next save
  std::size_t keep = 1;                ///< checkpoints of the series kept; 0: all
  SeriesOnDisk series;
};

/// The verdict.
struct Capacity {
  /// Saves that fit before one fails; nullopt: every one (the steady state fits).
  std::optional<std::uint64_t> saves;
  /// Some save fits only because the oldest is deleted before the new one is written (what
  /// save_checkpoint does); a torch.save followed by deletion would need one more.
  bool frees_first = false;
  std::uint64_t room_bytes = 0;  ///< for the next save: free + what may be freed before it
  std::uint64_t need_bytes = 0;  ///< save_need_bytes(checkpoint_bytes)
  std::uint64_t peak_bytes =
      0;  ///< the series' peak on disk in the steady state, the new one included

  /// critical: the next save fails; warn: a later one does, or the steady state fits only by
  /// deleting first; ok otherwise.
  [[nodiscard]] Severity severity() const;
};

/// Applies the rule.
[[nodiscard]] Capacity plan_capacity(const CapacityInput& input);

/// One line for people, the same in `check`, `watch` and the Monitor, e.g.
/// "/ckpt: every save fits: 5.7 MiB free + 8.1 MiB that retention (keep 3) frees first".
[[nodiscard]] std::string capacity_summary(const std::string& dir, const CapacityInput& input,
                                           const Capacity& capacity);

}  // namespace headroom
