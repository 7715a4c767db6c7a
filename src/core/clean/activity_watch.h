#pragma once
// Watching what is about to be removed for signs of use (inotify): a reader that opens,
// reads and closes files every few milliseconds holds nothing at the instant /proc is
// scanned or a lease is asked, but it opens something within a second. `clean --yes`
// watches every planned entry (each directory of a planned tree) for a grace period
// before it renames anything, and again right up to each rename; an entry that was
// opened, read, written, listed, created in or renamed meanwhile is kept.
// Watches are added through /proc/self/fd/N of an fd the caller opened O_NOFOLLOW, so
// they are on exactly the inode checked, never on whatever a path names later.

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/unique_fd.h"

namespace headroom {

class ActivityWatch {
 public:
  ActivityWatch();

  /// False when inotify is unavailable (then every add fails).
  [[nodiscard]] bool ok() const { return fd_.ok(); }
  /// Watches the directory open at `dir_fd` on behalf of `item`. With `child` set only
  /// events naming that entry of the directory count (a file item in a shared directory);
  /// otherwise any event in it does. Returns 0 or the errno (ENOSPC: the watch limit).
  int add(int dir_fd, std::size_t item, const std::string& child = "");
  /// Forgets what happened so far (our own walking while adding watches).
  void reset();
  /// Stops watching for `item` (before headroom itself touches it).
  void forget(std::size_t item);
  /// Reads what happened since; then `active` and `overflowed` answer.
  void collect();
  /// Something happened to `item`'s entries since the reset.
  [[nodiscard]] bool active(std::size_t item) const { return active_.count(item) > 0; }
  /// The kernel dropped events (its queue overflowed): activity is unknown for every item.
  [[nodiscard]] bool overflowed() const { return overflowed_; }

 private:
  struct Interest {
    std::size_t item;
    std::string child;  ///< "" for the whole directory
  };
  UniqueFd fd_;
  std::unordered_map<int, std::vector<Interest>> interests_;  // watch descriptor -> items
  std::unordered_set<std::size_t> active_;
  bool overflowed_ = false;
};

}  // namespace headroom
