#pragma once
// Internal to the tmp.* checks (tmp_dir.cc, tmp_exec.cc).

#include <optional>
#include <vector>

#include "core/checks/check.h"
#include "core/kernel/mountinfo.h"
#include "core/kernel/tempdir.h"

namespace headroom {

/// tmp.exec: whether compiled kernels (torch.compile, Triton) can be loaded
/// from where they are written, given the temp dir Python resolved to;
/// nullopt when there is no such place (no usable temp dir and no HOME).
[[nodiscard]] std::optional<Finding> tmp_exec(const CheckInput& input,
                                              const std::optional<TempdirCandidate>& temp_dir,
                                              const std::vector<MountEntry>* mounts);

}  // namespace headroom
