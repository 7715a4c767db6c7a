#pragma once
// The RDMA devices of the host. Source: the entries of /sys/class/infiniband
// (Documentation/ABI/stable/sysfs-class-infiniband), one per HCA port driver
// instance: mlx5_0 (InfiniBand or RoCE on ConnectX), rxe0 (soft-RoCE),
// efa_0 (AWS EFA), irdma0 (Intel).
// Quirks: the entries are symlinks into /sys/devices; the directory does not
// exist at all without an RDMA driver, which is not an error; a container sees
// the host's class directory when /sys is the host's (read-only) sysfs.

#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// Names of the RDMA devices, sorted; empty when the host has none. An Error
/// only when the directory exists but cannot be listed.
[[nodiscard]] Result<std::vector<std::string>> read_rdma_devices(const Context& context);

}  // namespace headroom
