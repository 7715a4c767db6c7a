#pragma once
// Finds the checkpoints in one directory and everything prune must know
// before deciding: sizes, step numbers, series, who holds them, whether they
// are still growing, what is inside them (to compare with their siblings),
// which are named by a symlink, a DeepSpeed `latest` file or a Hugging Face
// trainer_state.json, and the temp files of headroom.save_checkpoint with
// whether their writer is still alive.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/inuse/inuse_index.h"
#include "core/series/checkpoint_name.h"
#include "core/series/contents.h"
#include "core/walk/walker.h"

namespace headroom {

/// A process holding a checkpoint or a file inside it.
struct CheckpointHolder {
  int pid = 0;
  std::string command;
  std::string user;
  std::string how;  ///< "fd", "mmap", "cwd", ...
};

/// Whether the process that wrote a save temp is still at work.
enum class WriterState {
  kAlive,    ///< its pid lives, or something holds the file open
  kGone,     ///< its pid is gone and nothing holds the file: the save died
  kUnknown,  ///< nobody visible holds it, but not every process could be inspected
};

/// What an entry of the directory is.
enum class EntryKind {
  kCheckpoint,  ///< a checkpoint file or directory
  kSaveTemp,    ///< ".<name>.headroom-tmp-<pid>-<id>" of headroom.save_checkpoint
};

/// One checkpoint file or directory (or save temp), a direct child of the pruned directory.
struct Checkpoint {
  std::string name;
  EntryKind kind = EntryKind::kCheckpoint;
  bool directory = false;
  walk::FileStat stat;  ///< of the entry itself (identity re-checked before removal)
  walk::Tally tally;    ///< the whole subtree for a directory
  CheckpointName parsed;
  std::vector<CheckpointHolder> holders;
  bool growing = false;  ///< size or newest mtime changed across the settle interval
  /// Why something else names it: "symlink 'latest' points to it", ...; empty when nothing does.
  std::string named_by;
  /// DeepSpeed's `latest` file names it: the newest save every rank finished.
  bool latest_marker = false;
  /// The files of a directory checkpoint (empty for a file, or when not listed).
  std::vector<ContentFile> contents;
  /// Why its own format says it was cut short ("model.safetensors: holds 3.0 KiB of ..."); empty
  /// when intact or not checkable.
  std::string damage;
  /// kSaveTemp: the name it was to become, its writer and whether that writer lives.
  SaveTempName temp;
  WriterState writer = WriterState::kUnknown;
  /// Of a save temp or a checkpoint with `damage`: a save is writing it now (someone has it,
  /// or a file of a directory, open for writing). A live pid in a temp's name, or a reader
  /// holding a dead save's file (`tail -f`, a backup), is not: those bytes are no next save.
  bool being_written = false;
};

/// What to scan.
struct CheckpointScanOptions {
  std::filesystem::path dir;  ///< absolute
  /// Interval between the two measurements that detect a checkpoint still being written.
  std::chrono::milliseconds settle{200};
  bool in_use = true;  ///< scan /proc for holders
  /// Only the members of this series (a series_template, e.g. "step_{N}.pt"), whatever
  /// their extension; empty: every checkpoint-named entry.
  std::string series;
  /// Only entries whose name matches this glob (fnmatch), whatever they are called; empty: off.
  std::string glob;
  /// List the files of checkpoint directories and check file formats (completeness).
  bool contents = true;
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

/// One scan of /proc for the processes holding files on `dir_stat`'s filesystem (no SysV
/// segments). `incomplete_note`, when given, says why it may miss holders.
[[nodiscard]] Result<InUseIndex> scan_device(const Context& context, const walk::FileStat& dir_stat,
                                             std::string* incomplete_note = nullptr);

/// A checkpoint as it is now: its size and newest mtime (its subtree for a directory) and,
/// when measured against a scan, who holds it.
struct CheckpointNow {
  walk::Tally tally;
  std::vector<CheckpointHolder> holders;
};

/// Measures `checkpoint` again in one walk; with `index` (scan_device of its filesystem)
/// also its holders: the entry, anything under it, by id or by path.
[[nodiscard]] Result<CheckpointNow> remeasure(const std::filesystem::path& dir,
                                              const Checkpoint& checkpoint,
                                              const InUseIndex* index);

}  // namespace headroom
