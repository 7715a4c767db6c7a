#pragma once
// The parallel directory walker behind `headroom du` and `headroom prune`:
// openat/getdents64/statx relative to directory fds on N threads. Memory does
// not grow with the tree: totals are summed per top-level entry as the walk
// goes, and no path is kept except for the directories on each thread's stack.

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "core/walk/file_stat.h"

namespace headroom::walk {

/// Whether the walk may descend into other mounted filesystems.
enum class Mounts { kStayOnFilesystem, kCross };
/// Which size ranks entries: blocks on disk (du's default) or st_size.
enum class SizeKind { kDisk, kApparent };

/// Sums over a subtree. Hard-linked files count once per walk.
struct Tally {
  std::uint64_t disk_bytes = 0;
  std::uint64_t apparent_bytes = 0;
  std::uint64_t files = 0;        ///< entries that are not directories
  std::uint64_t directories = 0;  ///< including the subtree's own root
  std::int64_t newest_mtime_ns = 0;

  void add(const FileStat& stat);
  void add(const Tally& other);
  [[nodiscard]] std::uint64_t bytes(SizeKind kind) const {
    return kind == SizeKind::kDisk ? disk_bytes : apparent_bytes;
  }
};

/// Files to look for during the walk (e.g. those some process holds open).
using FileIdSet = std::unordered_set<FileId, FileIdHash>;

/// A watch set still being computed when the walk starts (du's /proc scan runs
/// alongside the walk, off its critical path). Until it is published each
/// worker keeps the ids it counts in a bounded buffer (and waits for the set
/// only when that fills), then checks them, so the answer is the same as with
/// a set known from the start.
class PendingWatch {
 public:
  /// Makes `set` visible to the walk (nullptr: nothing to watch). Call exactly
  /// once, from any thread; `set` must outlive the walk.
  void publish(const FileIdSet* set) {
    {
      const std::lock_guard lock(mutex_);
      set_ = set;
      published_.store(true, std::memory_order_release);
    }
    ready_.notify_all();
  }
  [[nodiscard]] bool published() const { return published_.load(std::memory_order_acquire); }
  /// The published set; call only once published() is true.
  [[nodiscard]] const FileIdSet* set() const { return set_; }
  /// Blocks until publish() and returns its set.
  const FileIdSet* wait() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return published_.load(std::memory_order_relaxed); });
    return set_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  const FileIdSet* set_ = nullptr;
  std::atomic<bool> published_{false};
};

/// Live counters a front end may poll for a progress line.
struct WalkProgress {
  std::atomic<std::uint64_t> entries{0};
  std::atomic<std::uint64_t> disk_bytes{0};
  std::atomic<std::uint64_t> directories{0};
};

/// What to walk and how.
struct WalkOptions {
  Mounts mounts = Mounts::kStayOnFilesystem;
  SizeKind size = SizeKind::kDisk;
  unsigned threads = 0;  ///< 0: default_threads()
  /// Keep at most this many top-level non-directories individually (the
  /// largest); the rest are folded into WalkResult::folded. 0 keeps all.
  std::size_t keep_files = 0;
  const FileIdSet* watch = nullptr;       ///< report which of these lie under each entry
  PendingWatch* pending_watch = nullptr;  ///< the same, for a set published during the walk
  WalkProgress* progress = nullptr;
};

/// A path the walk could not read, and why.
struct WalkProblem {
  std::string path;
  std::string reason;
};

/// One direct child of the walked root, with the totals of its subtree.
struct TopEntry {
  std::string name;
  FileStat stat;  ///< of the entry itself
  Tally tally;
  std::vector<FileId>
      watched;  ///< members of WalkOptions::watch found under it (at most kMaxWatched)
  std::uint64_t watched_count = 0;
  bool mount_point = false;  ///< another filesystem, not entered
};

/// Everything a walk found.
struct WalkResult {
  static constexpr std::size_t kMaxProblems = 20;
  static constexpr std::size_t kMaxWatched = 16;

  std::filesystem::path root;
  FileStat root_stat;
  Tally total;                    ///< the root itself and everything under it
  std::vector<TopEntry> entries;  ///< unordered
  Tally folded;                   ///< top-level files beyond keep_files
  std::uint64_t folded_count = 0;
  std::uint64_t unreadable = 0;  ///< directories that could not be opened or listed
  std::uint64_t vanished = 0;    ///< entries removed while walking
  std::uint64_t mounts_skipped = 0;
  std::uint64_t hard_links_skipped = 0;     ///< extra names of files already counted
  std::vector<WalkProblem> problems;        ///< the first kMaxProblems unreadable paths
  std::vector<std::string> skipped_mounts;  ///< the first kMaxProblems mount points not entered
  unsigned threads = 0;
};

/// Threads used when WalkOptions::threads is 0: four per CPU (4..64), because
/// a cold-cache walk waits on the disk, not the CPU.
[[nodiscard]] unsigned default_threads();

/// Walks `root` (never following symlinks, the root included). Fails only when
/// the root itself cannot be examined; unreadable subdirectories are counted.
[[nodiscard]] Result<WalkResult> walk(const std::filesystem::path& root,
                                      const WalkOptions& options);

}  // namespace headroom::walk
