#pragma once
// The mount table kept between samples. /proc/<pid>/mountinfo stays open and
// poll(2) reports POLLPRI on it after any mount or unmount in the namespace
// (proc(5), "/proc/pid/mounts"), so a long watch re-reads and re-parses it
// only then; on a 200-mount Kubernetes node that read is most of a sample. A
// mountinfo that is not on procfs (a fixture tree) is re-read every time.

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/kernel/mountinfo.h"
#include "core/unique_fd.h"

namespace headroom {

/// The mounts of the context's process, re-read when they changed.
class MountTable {
 public:
  /// The current mounts; valid until the next call.
  [[nodiscard]] Result<const std::vector<MountEntry>*> current(const Context& context);
  /// Counts the tables current() has returned that differ from the one before: what
  /// was worked out from the mounts (a cgroup's directory) holds while it is the same.
  [[nodiscard]] std::uint64_t generation() const { return generation_; }

 private:
  [[nodiscard]] bool changed() const;

  UniqueFd fd_;
  bool pollable_ = false;  ///< on procfs: POLLPRI tells a change
  bool loaded_ = false;
  std::vector<MountEntry> mounts_;
  std::string text_;  ///< what mounts_ was parsed from, when not pollable
  std::uint64_t generation_ = 0;
};

}  // namespace headroom
