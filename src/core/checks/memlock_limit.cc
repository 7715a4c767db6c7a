// memlock.limit: RLIMIT_MEMLOCK ("Max locked memory", ulimit -l) where the host
// has RDMA devices. NCCL over InfiniBand or RoCE (and any verbs user: MPI,
// UCX, GPUDirect) registers its buffers with the adapter, which pins them and
// charges them to this limit; under a small one registration fails with
// ENOMEM: "libibverbs: Warning: RLIMIT_MEMLOCK is 65536 bytes", NCCL's "Call
// to ibv_reg_mr failed with error Cannot allocate memory". Without an RDMA
// device nothing registers memory and the limit does not matter for training.
// NVIDIA's containers ask for `--ulimit memlock=-1` (unlimited); Docker's
// containers otherwise inherit dockerd's limit, systemd's default of 8 MiB
// (64 KiB on older systems). Thresholds: docs/checks.md, "memlock.limit".

#include <fmt/format.h>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/infiniband.h"
#include "core/kernel/limits.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr RlimitNames kMemlockNames{"-l", kKiB, "memlock", "LimitMEMLOCK", "memlock", "MEMLOCK"};

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::vector<std::string> remedies(const CheckInput& input, const Limit& limit) {
  std::vector<std::string> lines =
      raise_limit_remedies(input.runtime, kMemlockNames, limit, std::nullopt);
  if (input.runtime.slurm) {
    lines.emplace_back(
        "Slurm's own fix (its FAQ on memlock): the admins set "
        "PropagateResourceLimitsExcept=MEMLOCK "
        "in slurm.conf and LimitMEMLOCK=infinity in slurmd.service, so jobs get slurmd's "
        "unlimited limit instead of the login node's");
  }
  if (input.runtime.kind == RuntimeKind::kDocker || input.runtime.kind == RuntimeKind::kPodman ||
      input.runtime.kind == RuntimeKind::kKubernetes) {
    lines.emplace_back(
        "for all containers of a node: \"default-ulimits\": {\"memlock\": {\"Name\": \"memlock\", "
        "\"Soft\": -1, \"Hard\": -1}} in /etc/docker/daemon.json, default_ulimits = "
        "[\"memlock=-1:-1\"] in crio.conf, or LimitMEMLOCK=infinity in containerd.service");
  }
  return lines;
}

}  // namespace

std::vector<Finding> check_memlock_limit(const CheckInput& input) {
  const CheckOptions& options = input.options;
  Finding finding;
  finding.id = "memlock.limit";
  finding.subject = "RLIMIT_MEMLOCK";
  finding.why =
      "NCCL over InfiniBand or RoCE registers its buffers with the RDMA adapter, which pins them "
      "and counts them against the locked-memory limit; under a small limit registration fails "
      "(\"Call to ibv_reg_mr failed with error Cannot allocate memory\", libibverbs' "
      "\"RLIMIT_MEMLOCK is 65536 bytes\") and the job dies at its first collective";
  auto limit = read_limit(input.context, "Max locked memory");
  if (!limit) return {unknown_finding(finding.id, finding.subject, limit.error().message)};
  auto devices = read_rdma_devices(input.context);
  if (!devices) return {unknown_finding(finding.id, finding.subject, devices.error().message)};
  finding.add("soft_limit_bytes", limit_value(limit->soft), "bytes");
  finding.add("hard_limit_bytes", limit_value(limit->hard), "bytes");
  finding.add("rdma_device_count", static_cast<std::uint64_t>(devices->size()), "count");
  if (!devices->empty()) finding.add("rdma_devices", joined(*devices));
  const std::string current =
      fmt::format("locked-memory limit {} ({})", limit_text(limit->soft, LimitUnit::kBytes),
                  ulimit_command(kMemlockNames, limit->soft));
  if (devices->empty()) {
    finding.summary = fmt::format(
        "{}; no RDMA device in /sys/class/infiniband, so nothing registers memory and it does "
        "not matter here",
        current);
    return {std::move(finding)};
  }
  const std::string where =
      fmt::format("{} RDMA device(s) ({})", devices->size(), joined(*devices));
  if (limit->soft == Limit::kUnlimited) {
    finding.summary = fmt::format("{} with {}", current, where);
    return {std::move(finding)};
  }
  const bool distributed = options.gpus > 1 || options.ranks > 1;
  finding.severity = distributed ? Severity::kCritical : Severity::kWarn;
  finding.summary = fmt::format(
      "{} with {}: NCCL registers its buffers with the adapter, and NVIDIA asks for unlimited "
      "(--ulimit memlock=-1); {}",
      current, where,
      distributed ? fmt::format("with {} GPU(s) and {} rank(s) NCCL's first collective over "
                                "InfiniBand/RoCE fails with \"ibv_reg_mr failed\"",
                                options.gpus, options.ranks)
                  : std::string("a multi-GPU or multi-node job's collectives fail with "
                                "\"ibv_reg_mr failed\""));
  finding.remedy = remedies(input, *limit);
  return {std::move(finding)};
}

}  // namespace headroom
