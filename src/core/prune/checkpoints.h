#pragma once
// Finds the checkpoints in one directory and everything prune must know
// before deciding: sizes, step numbers, who holds them, whether they are
// still growing, and which are named by a symlink, a DeepSpeed `latest` file
// or a Hugging Face trainer_state.json.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/prune/checkpoint_name.h"
#include "core/walk/walker.h"

namespace headroom {

/// A process holding a checkpoint or a file inside it.
struct CheckpointHolder {
  int pid = 0;
  std::string command;
  std::string user;
  std::string how;  ///< "fd", "mmap", "cwd", ...
};

/// One checkpoint file or directory, a direct child of the pruned directory.
struct Checkpoint {
  std::string name;
  bool directory = false;
  walk::FileStat stat;  ///< of the entry itself (identity re-checked before removal)
  walk::Tally tally;    ///< the whole subtree for a directory
  CheckpointName parsed;
  std::vector<CheckpointHolder> holders;
  bool growing = false;  ///< size or newest mtime changed across the settle interval
  /// Why something else names it: "symlink 'latest' points to it", ...; empty when nothing does.
  std::string named_by;
};

/// What to scan.
struct CheckpointScanOptions {
  std::filesystem::path dir;  ///< absolute
  /// Interval between the two measurements that detect a checkpoint still being written.
  std::chrono::milliseconds settle{200};
  bool in_use = true;  ///< scan /proc for holders
};

/// The checkpoints of one directory.
struct CheckpointScan {
  std::filesystem::path dir;
  walk::FileStat dir_stat;
  std::vector<Checkpoint> checkpoints;  ///< in directory order
  /// Why the holder check may be incomplete (unreadable pids, hidepid, scan error); empty when
  /// complete.
  std::string in_use_note;
  std::uint64_t mounts_skipped = 0;  ///< checkpoint-looking mount points, never candidates
};

/// Lists and measures the checkpoints of options.dir (not recursive).
[[nodiscard]] Result<CheckpointScan> scan_checkpoints(const Context& context,
                                                      const CheckpointScanOptions& options);

/// Size and newest mtime of a checkpoint now (its subtree for a directory).
[[nodiscard]] Result<walk::Tally> measure_checkpoint(const std::filesystem::path& dir,
                                                     const Checkpoint& checkpoint);

/// Holders of `checkpoint` (the entry, anything under it, by id or by path) in a fresh scan of
/// /proc.
[[nodiscard]] Result<std::vector<CheckpointHolder>> current_holders(
    const Context& context, const std::filesystem::path& dir, const Checkpoint& checkpoint,
    std::string* incomplete_note = nullptr);

}  // namespace headroom
