#pragma once
// The preflight: the job shape it checks against, and the one table of checks.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/finding.h"
#include "core/kernel/runtime.h"

namespace headroom {

/// What the job will need; everything optional has a documented default.
struct CheckOptions {
  /// Directories the job writes to (checkpoints, logs); default: the working directory.
  std::vector<std::filesystem::path> dirs;
  double warn_percent = 85.0;
  double critical_percent = 95.0;
  std::optional<std::uint64_t> checkpoint_bytes;  ///< --ckpt-size
  std::uint64_t keep = 1;                         ///< --keep: checkpoints kept at once
  std::uint64_t workers = 0;                      ///< DataLoader num_workers per rank
  std::uint64_t prefetch = 2;                     ///< DataLoader prefetch_factor
  std::optional<std::uint64_t> batch_bytes;       ///< bytes of one batch
  std::uint64_t ranks = 1;                        ///< training processes per host
  std::uint64_t gpus = 0;                         ///< GPUs per host (NCCL shm transport)
  std::optional<std::uint64_t> worker_rss;        ///< resident memory of one process
  /// Tensor storages in one batch (each holds one fd while it lives); 2 when unknown.
  std::optional<std::uint64_t> tensors_per_batch;
  /// fds the job's main process holds before its DataLoader starts; unknown: assumed.
  std::optional<std::uint64_t> base_fds;
  /// Only these findings (ids as printed, or prefixes such as "shm"); empty: all.
  std::vector<std::string> only;
  /// kernel.oom for one job (run's preflight): only kills of this uid's processes in the
  /// examined process's memory cgroup or below it, or under a limit that bounds it too.
  /// nullopt (check): every kill on the host.
  std::optional<std::int64_t> oom_job_uid;
};

/// What every check receives.
struct CheckInput {
  const Context& context;
  const CheckOptions& options;
  const Runtime& runtime;
};

/// One entry of the check table.
struct CheckSpec {
  std::string_view
      id;  ///< prefix of the finding ids it yields, e.g. "tmp" for tmp.space/tmp.socket
  std::string_view help;
  std::vector<Finding> (*run)(const CheckInput& input);
  std::string_view findings;  ///< the ids of the findings it yields, space-separated
};

/// The table of all checks, in the order they run.
[[nodiscard]] std::span<const CheckSpec> check_table();
/// Every finding id the checks yield ("shm.capacity", "tmp.exec", "fd.system", ...), in the
/// order they run: what reports print and what --only (and Python's only=) take.
[[nodiscard]] std::vector<std::string_view> finding_ids();

/// Validates options (thresholds in range, counts sensible); an Error names the flag.
[[nodiscard]] Result<void> validate(const CheckOptions& options);

/// Runs every check (or those in options.only) and returns the findings worst first.
[[nodiscard]] Report run_checks(const Context& context, const CheckOptions& options);

/// Peak /dev/shm bytes of the DataLoaders of all ranks: ranks x workers x prefetch x batch.
[[nodiscard]] std::uint64_t dataloader_shm_need(const CheckOptions& options);
/// The /dev/shm size remedies ask for when the job's shape is not known (no --workers
/// and --batch-bytes, or `explain` of a log): one value for check, run and explain.
constexpr std::uint64_t kShmSizeWithoutShape = std::uint64_t{1} << 30;
/// /dev/shm bytes of NCCL's shm transport for options.gpus ranks (see shm_capacity.cc).
[[nodiscard]] std::uint64_t nccl_shm_need(const CheckOptions& options);

// The checks, one file each under checks/.
std::vector<Finding> check_disk_space(const CheckInput& input);
std::vector<Finding> check_tmp(const CheckInput& input);
std::vector<Finding> check_shm_capacity(const CheckInput& input);
std::vector<Finding> check_shm_stale(const CheckInput& input);
std::vector<Finding> check_memory(const CheckInput& input);
std::vector<Finding> check_fd_limit(const CheckInput& input);
std::vector<Finding> check_container_runtime(const CheckInput& input);
std::vector<Finding> check_kernel_oom(const CheckInput& input);
std::vector<Finding> check_pids_limit(const CheckInput& input);
std::vector<Finding> check_fsize_limit(const CheckInput& input);
std::vector<Finding> check_memlock_limit(const CheckInput& input);
std::vector<Finding> check_job_shape(const CheckInput& input);

}  // namespace headroom
