#pragma once
// `headroom du`: the largest entries under a path, with size, file count,
// newest modification, owner, and which processes hold something under each
// (from the in-use index). The walk itself is walker.h.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/walk/walker.h"

namespace headroom {

/// What `du` examines and how.
struct DuOptions {
  std::filesystem::path path;  ///< absolute host path
  std::size_t top = 20;        ///< entries listed; the rest are summed into "other"
  walk::SizeKind size = walk::SizeKind::kDisk;
  walk::Mounts mounts = walk::Mounts::kStayOnFilesystem;
  unsigned threads = 0;  ///< 0: walk::default_threads()
  bool in_use = true;    ///< scan /proc to say who holds files under each entry
  walk::WalkProgress* progress = nullptr;
};

/// A process holding something under an entry.
struct DuHolder {
  int pid = 0;
  std::string user;
  std::string command;
  std::string how;  ///< "fd", "mmap", "cwd", ...
};

/// One listed entry.
struct DuEntry {
  std::string name;
  walk::FileKind kind = walk::FileKind::kFile;
  uid_t owner_uid = 0;
  std::string owner;
  walk::Tally tally;
  bool mount_point = false;       ///< another filesystem, not entered
  std::uint64_t held_files = 0;   ///< files under it that some process holds
  std::vector<DuHolder> holders;  ///< distinct pids, at most kMaxHolders
  static constexpr std::size_t kMaxHolders = 8;
};

/// The answer of `du`.
struct DuReport {
  std::filesystem::path path;
  walk::SizeKind size = walk::SizeKind::kDisk;
  walk::Mounts mounts = walk::Mounts::kStayOnFilesystem;
  walk::Tally total;
  std::vector<DuEntry> entries;   ///< largest first
  std::uint64_t other_count = 0;  ///< entries not listed
  walk::Tally other;
  std::uint64_t unreadable = 0;
  std::vector<walk::WalkProblem> problems;
  std::uint64_t mounts_skipped = 0;
  std::vector<std::string> skipped_mounts;
  std::uint64_t hard_links_skipped = 0;
  std::uint64_t vanished = 0;
  unsigned threads = 0;
  std::chrono::milliseconds elapsed{0};
  std::int64_t now_ns = 0;  ///< when the scan ended, for ages
  bool in_use_checked = false;
  /// Why the in-use column may be incomplete (unreadable pids, hidepid, scan error).
  std::string in_use_note;
};

/// Walks options.path and annotates the largest entries with their holders.
[[nodiscard]] Result<DuReport> run_du(const Context& context, const DuOptions& options);

}  // namespace headroom
