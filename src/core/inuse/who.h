#pragma once
// `headroom who PATH...`: which processes hold files at or under each path (the
// question of `lsof +D` and `fuser`), including segments mapped after their fd was
// closed and files deleted while open. The CLI adds flags and the exit code.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/inuse/inuse_index.h"
#include "core/operand.h"

namespace headroom {

/// One path asked about.
struct WhoTarget {
  Operand operand;  ///< as given, and resolved (a symlink operand is followed, as fuser does)
  FileId id;
};

struct WhoAnswer {
  std::vector<WhoTarget> targets;
  InUseIndex index;  ///< scanned for the targets' paths only

  /// The holders of target `i`'s file or anything under it.
  [[nodiscard]] std::vector<const Holder*> holders(std::size_t i) const;
  /// True when some target is held.
  [[nodiscard]] bool any() const;
};

/// Resolves `paths` (relative to the context's working directory) and scans /proc for
/// their holders; `with_cmdline` reads each holder's command line too (the JSON has it).
/// Errors: a path that cannot be resolved or stat'ed, or /proc unreadable.
[[nodiscard]] Result<WhoAnswer> who(const Context& context, std::span<const std::string> paths,
                                    bool with_cmdline);

}  // namespace headroom
