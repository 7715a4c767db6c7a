#pragma once
// One rule, used by clean, prune, check and watch, for "does anyone use this file?"
// (docs/safety.md). /proc names the holders it can see; the kernel's lease answer
// (Syscalls::write_lease) covers the processes it cannot: other users', unreadable ones, those of
// pid namespaces around this one. A file is unused only when one of the two proves it:
//   - a holder is visible in the index (fd, map, cwd, root, exe)      -> in use;
//   - the kernel refused a write lease (another open or mapping)      -> in use;
//   - the kernel granted one                                          -> unused;
//   - no lease answer (not ours, leases off, not a regular file): unused only when
//     every process that could hold it was inspected                  -> else unknown.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/inuse/inuse_index.h"
#include "core/unique_fd.h"
#include "core/walk/file_stat.h"

namespace headroom {

/// An unreadable process, with what /proc/<pid>/status (readable by anyone) tells of it.
struct UnseenProcess {
  int pid = 0;
  std::string command;
  bool status_known = false;
  uid_t fs_uid = 0;
  gid_t fs_gid = 0;
  std::vector<gid_t> groups;
};

/// The processes an index could not see into, minus the ones the caller vouches for.
struct Visibility {
  std::vector<int> unreadable;               ///< pids refused to us (kernel threads never count)
  std::vector<UnseenProcess> unseen;         ///< the same pids, with their credentials
  bool hidepid = false;                      ///< other users' pids are invisible
  bool outer_pid_namespaces_hidden = false;  ///< we run inside a pid namespace
  /// The kernel to ask for a lease about what was not seen (the context's); none: no lease.
  const Syscalls* kernel = nullptr;

  /// Every process that could hold a file was inspected.
  [[nodiscard]] bool complete() const {
    return unreadable.empty() && !hidepid && !outer_pid_namespaces_hidden;
  }
  /// One line naming what was not seen ("" when complete).
  [[nodiscard]] std::string describe() const;
  /// For what a lease cannot vouch for (a directory someone may work in, a FIFO): who could
  /// be using `stat` without headroom seeing it, for a caller of effective uid `caller`.
  /// nullopt: nobody. The pids that could are appended to `could` when given.
  [[nodiscard]] std::optional<std::string> unseen_users(const walk::FileStat& stat, uid_t caller,
                                                        std::vector<int>* could = nullptr) const;
};

/// What `index` could not see, leaving out the pids in `vouched`; reads the status of each
/// unseen pid under the context's root.
[[nodiscard]] Visibility visibility_of(const Context& context, const InUseIndex& index,
                                       std::span<const int> vouched = {});

enum class Use { kUnused, kInUse, kUnknown };
/// "unused", "in use", "unknown".
[[nodiscard]] std::string_view to_string(Use use);

/// The answer for one file, with the evidence in words.
struct UseAnswer {
  Use use = Use::kUnknown;
  std::vector<int> holders;  ///< visible holders (ascending)
  std::string why;           ///< "in use by pid 12 (python3)", "the kernel granted ..."
};

/// Opens `name` in `dir_fd` for a lease probe: O_RDONLY|O_NOFOLLOW|O_NONBLOCK, never a
/// FIFO or device (only a regular file is opened), and only if it is still `expected`.
/// An invalid fd when that fails; errno EWOULDBLOCK means someone holds a lease on it.
[[nodiscard]] UniqueFd open_for_probe(int dir_fd, const char* name, FileId expected);

/// The rule above for the regular file `id`, open at `fd` (from open_for_probe; -1 when it
/// could not be opened, `open_errno` then says why).
[[nodiscard]] UseAnswer regular_file_use(const InUseIndex& index, const Visibility& visibility,
                                         FileId id, int fd, int open_errno = 0);

/// "in use by pid 12 (python3), 40 (pt_data_worker)" (five at most, then "and N more").
[[nodiscard]] std::string describe_holders(const InUseIndex& index, const std::vector<int>& pids);

/// Unique pids of holders, ascending.
[[nodiscard]] std::vector<int> holder_pids(const std::vector<const Holder*>& holders);

}  // namespace headroom
