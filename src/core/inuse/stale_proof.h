#pragma once
// When "no process holds it" is proven. The in-use index names the holders it can
// see; a file it found no holder for is stale only when nothing could have been
// missed: every process that might hold it was inspected (kernel threads hold no
// files; hidepid hides processes; from inside a pid namespace the processes outside
// are invisible), or the kernel itself says no other open file description or
// mapping exists (a write lease, lease_probe.h). Otherwise the answer is "unknown",
// never "stale": an unprivileged watch used to count a segment another user's live
// job held as stale (issue 15).

#include <filesystem>
#include <string_view>

#include "core/context.h"
#include "core/inuse/inuse_index.h"

namespace headroom {

/// Whether `index` saw every process that could hold a file: each pid it could not
/// read is a kernel thread, /proc has no hidepid, and this is the initial pid namespace.
[[nodiscard]] bool saw_every_holder(const Context& context, const InUseIndex& index);

/// What is known of a file the index found no holder for.
enum class Unheld {
  kStale,    ///< proven: no holder anywhere
  kHeld,     ///< the kernel refused a lease: someone the scan could not see holds it
  kUnknown,  ///< not proven either way (another user's file, leases off)
};

/// "stale", "held", "unknown".
[[nodiscard]] std::string_view to_string(Unheld unheld);

/// Proves a file (a host path under the root prefix) that the index found no holder
/// for: stale at once when `saw_everyone`, else by a lease on it.
[[nodiscard]] Unheld prove_unheld(const std::filesystem::path& file, bool saw_everyone);

}  // namespace headroom
