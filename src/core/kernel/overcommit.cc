// vm.overcommit_memory, vm.overcommit_ratio, vm.overcommit_kbytes; see overcommit.h.
#include "core/kernel/overcommit.h"

#include <fmt/format.h>

#include "core/kernel/kernel_tasks.h"

namespace headroom {

std::string_view to_string(OvercommitMode mode) {
  switch (mode) {
    case OvercommitMode::kHeuristic:
      return "heuristic";
    case OvercommitMode::kAlways:
      return "always";
    case OvercommitMode::kStrict:
      return "strict";
  }
  return "heuristic";
}

Result<Overcommit> read_overcommit(const Context& context) {
  auto mode = read_sysctl_number(context, "sys/vm/overcommit_memory");
  if (!mode) return fail(mode.error());
  if (*mode > 2) {
    return fail(Error::parse(fmt::format(
        "{}: unknown mode {}",
        context.root.display(context.root.proc("sys/vm/overcommit_memory")).string(), *mode)));
  }
  auto ratio = read_sysctl_number(context, "sys/vm/overcommit_ratio");
  if (!ratio) return fail(ratio.error());
  // overcommit_kbytes exists since Linux 3.14; before it only the ratio set CommitLimit.
  auto kbytes = read_sysctl_number(context, "sys/vm/overcommit_kbytes");
  if (!kbytes && kbytes.error().code != Error::Code::kNotFound) return fail(kbytes.error());
  return Overcommit{static_cast<OvercommitMode>(*mode), *ratio, kbytes.value_or(0)};
}

}  // namespace headroom
