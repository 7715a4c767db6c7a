#pragma once
// `headroom clean`: plan, then (only when asked) remove stale /dev/shm
// segments, SysV segments with no attachments, and old temp-dir entries that
// no process uses. Safety rules (docs/safety.md): never follow a symlink,
// never cross a mount (bind mounts included), work relative to directory fds opened
// O_NOFOLLOW|O_DIRECTORY, prove every file unused (visible holders, the kernel's lease
// answer, live sockets of every network namespace, recent use), watch for use during a
// grace period, re-check every item right before removing it, only the caller's files
// (at every depth) unless all_users, never the protected names, never kill.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/inuse/inuse_index.h"
#include "core/inuse/user_names.h"

namespace headroom {

/// What to clean and how old it must be.
struct CleanOptions {
  bool shm = false;  ///< stale segments in /dev/shm and SysV
  bool tmp = false;  ///< old unused entries of tmp_dir
  /// Minimum age (since last modification). tmp: default 1 day; shm: none by default.
  std::optional<std::chrono::seconds> older_than;
  bool all_users = false;  ///< root only: everybody's files
  /// Root only: this uid's files, not the caller's (a Slurm epilog cleans up after the job's
  /// owner). Cannot be combined with all_users.
  std::optional<uid_t> user;
  std::filesystem::path tmp_dir = "/tmp";  ///< host path, resolved by the front end
  /// tmp_dir was named with --tmp-dir: it need not be sticky and world-writable (it still
  /// may not be a system directory).
  bool tmp_dir_explicit = false;
  /// How long --yes watches planned entries for use before it removes any (0: not at all).
  std::chrono::milliseconds grace{2000};
  std::filesystem::path audit_log;  ///< host path of the JSON-lines log; empty: none
  /// Pids that could not be inspected but that the caller vouches hold nothing
  /// we would clean (--ignore-unreadable).
  std::vector<int> ignore_unreadable;
};

/// Default minimum age of temp-dir entries.
constexpr std::chrono::seconds kDefaultTmpAge{24 * 3600};

enum class CleanKind { kShmFile, kSysvSegment, kTmpFile, kTmpDir };
/// "shm_file", "sysv_segment", "tmp_file", "tmp_dir".
[[nodiscard]] std::string_view to_string(CleanKind kind);

/// One thing the plan would remove (or has removed).
struct CleanItem {
  CleanKind kind = CleanKind::kShmFile;
  std::filesystem::path path;    ///< host path; "shmid <n>" style text for SysV
  std::filesystem::path parent;  ///< host path of the directory holding it
  FileId parent_id;              ///< the directory as planned; a swapped one is refused
  std::string name;              ///< entry name within parent
  FileId id;
  int shmid = -1;
  std::int64_t key = 0;
  uid_t uid = 0;
  std::string owner;
  std::uint64_t bytes = 0;      ///< allocated bytes it frees
  std::uint64_t files = 1;      ///< entries it contains (directories)
  std::chrono::seconds age{0};  ///< since the last use (modified, changed or read)
  std::string why_safe;
};

/// Something considered and left alone, with the reason.
struct KeptItem {
  std::filesystem::path path;
  std::string reason;
  std::uint64_t bytes = 0;
};

/// The plan: what would go and what stays.
struct CleanPlan {
  std::vector<CleanItem> items;
  std::vector<KeptItem> kept;
  std::uint64_t total_bytes = 0;
  std::size_t processes_scanned = 0;
  std::vector<int> unreadable_pids;  ///< every pid that could not be inspected (no kernel thread)
  /// Of those, the ones that kept something (could be using it; not vouched for).
  std::vector<int> blocking_pids;
  /// What the scan could not see, when that kept something ("" otherwise).
  std::string visibility_note;
};

/// What --yes did.
struct CleanResult {
  std::vector<CleanItem> removed;
  std::vector<KeptItem> skipped;
  std::uint64_t freed_bytes = 0;
  std::vector<std::string> audit_errors;
  bool interrupted = false;  // should_stop said stop: the rest were not touched
};

/// Whether `owner`'s files are cleaned by `caller` with these options (all_users, user, or
/// the caller's own); applied to every entry at every depth.
[[nodiscard]] bool cleans_owner(const CleanOptions& options, uid_t caller, uid_t owner);
/// Why `owner`'s entry is kept by that rule, nullopt when it is cleaned: "owned by alice
/// (use --all-users as root)", or with --user "owned by alice, not bob (--user)".
[[nodiscard]] std::optional<std::string> owner_refusal(const CleanOptions& options, uid_t caller,
                                                       uid_t owner, UserNames& names);

/// Validates options against the caller (all_users and user need uid 0, a target is
/// chosen).
[[nodiscard]] Result<void> validate(const CleanOptions& options, const Context& context);
/// Surveys /dev/shm, SysV shm and the temp dir; removes nothing.
[[nodiscard]] Result<CleanPlan> plan_clean(const Context& context, const CleanOptions& options);
/// Re-checks each planned item and removes those that are still safe to remove.
/// `should_stop` is asked between batches (the CLI: a deferred SIGINT/SIGTERM/SIGHUP);
/// a batch once begun is finished, so nothing is left under a quarantine name.
[[nodiscard]] CleanResult apply_clean(const Context& context, const CleanOptions& options,
                                      const CleanPlan& plan,
                                      const std::function<bool()>& should_stop = {});

}  // namespace headroom
