#include "core/inuse/stale_proof.h"

#include <fcntl.h>

#include "core/inuse/lease_probe.h"
#include "core/unique_fd.h"

namespace headroom {

bool saw_every_holder(const Context& context, const InUseIndex& index) {
  if (index.hidepid() || !sees_initial_pid_namespace(context)) return false;
  for (const int pid : index.unreadable_pids()) {
    if (!is_kernel_thread(context, pid)) return false;
  }
  return true;
}

std::string_view to_string(Unheld unheld) {
  switch (unheld) {
    case Unheld::kStale:
      return "stale";
    case Unheld::kHeld:
      return "held";
    case Unheld::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Unheld prove_unheld(const std::filesystem::path& file, bool saw_everyone) {
  if (saw_everyone) return Unheld::kStale;
  // O_NONBLOCK: never wait on someone else's lease break.
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return Unheld::kUnknown;  // another user's 0600 segment, or gone
  switch (lease_probe(fd.get())) {
    case LeaseAnswer::kUnused:
      return Unheld::kStale;
    case LeaseAnswer::kInUse:
      return Unheld::kHeld;
    case LeaseAnswer::kUnknown:
      break;
  }
  return Unheld::kUnknown;
}

}  // namespace headroom
