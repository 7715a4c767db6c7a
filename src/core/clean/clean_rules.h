#pragma once
// The rules shared by planning and removing (docs/safety.md): protected names, ages,
// owners, the temp dir itself, and for every entry of a planned item whether it may go.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clean/clean.h"
#include "core/clean/tree_walk.h"
#include "core/inuse/use_proof.h"
#include "core/inuse/user_names.h"
#include "core/kernel/proc_net_unix.h"

namespace headroom {

/// Names in the temp dir that are never removed, whatever their age or use:
/// systemd's PrivateTmp dirs, X11/ICE/font/XIM/Test socket dirs, snap's.
[[nodiscard]] bool protected_tmp_name(std::string_view name);
/// Minimum age for the temp dir (default 1 day) or /dev/shm (none by default).
[[nodiscard]] std::chrono::seconds minimum_age(const CleanOptions& options, bool tmp);
/// Name used while an entry is being removed: 64 random bits, so nobody opens it by name.
[[nodiscard]] std::string quarantine_name();

/// The checks of check_tmp_dir that need no open: absolute, no "..", not below a system tree.
[[nodiscard]] Result<void> check_tmp_path(const std::filesystem::path& dir);
/// Whether `dir` (a host path, opened as `dir_fd`) may be cleaned as a temp dir: never "/",
/// a system directory or one of their aliases; unless `explicit_dir`, only a sticky,
/// world-writable directory (what /tmp and /var/tmp are). An error says why not.
[[nodiscard]] Result<void> check_tmp_dir(const Context& context, const std::filesystem::path& dir,
                                         int dir_fd, bool explicit_dir);

/// Decides, for every entry of a planned item, whether it may go. The same object judges
/// at the plan and, rebuilt from fresh scans, at the re-check right before removal.
class EntryJudge {
 public:
  EntryJudge(const Context& context, const CleanOptions& options, const InUseIndex& index,
             const LiveSockets* sockets, std::chrono::seconds minimum_age);

  /// Why `entry` must stay (nullopt: it may go). `shown` is its path as the host shows it.
  /// `check_age` false: recent use is not a reason (after headroom's own rename, which
  /// changes the ctime).
  [[nodiscard]] std::optional<std::string> keep(const TreeEntry& entry, std::string_view shown,
                                                bool check_age = true) const;
  /// Visibility::unseen_users for this caller, noting the pids in blocking().
  [[nodiscard]] std::optional<std::string> unseen_users(const walk::FileStat& stat) const {
    return visibility_.unseen_users(stat, euid_, &blocking_);
  }
  /// Pids whose unreadability kept something (for the summary and --ignore-unreadable).
  [[nodiscard]] const std::vector<int>& blocking() const { return blocking_; }
  [[nodiscard]] const Visibility& visibility() const { return visibility_; }
  [[nodiscard]] const InUseIndex& index() const { return index_; }

 private:
  const Context& context_;
  const CleanOptions& options_;
  const InUseIndex& index_;
  const LiveSockets* sockets_;
  Visibility visibility_;
  uid_t euid_;
  std::chrono::seconds minimum_age_{0};
  std::int64_t newest_allowed_ns_ = 0;  // activity after this is too recent
  mutable UserNames names_;
  mutable std::vector<int> blocking_;
};

}  // namespace headroom
