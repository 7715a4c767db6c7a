// job.shape: does the host have what the job's shape names? Every size the other checks
// compute from --gpus, --workers and --ranks (NCCL's shm segments, fds, tasks, locked
// memory) assumes that hardware; a shape the host cannot run is said, with what was seen,
// rather than silently sized for.
//   CPUs: the examined process's Cpus_allowed_list (its affinity: what a container's
//         cpuset or taskset leaves), as PyTorch's DataLoader counts them when it warns
//         "Our suggested max number of worker in current system is N".
//   GPUs: NVIDIA's /proc/driver/nvidia/gpus/<pci-address> entries, else /dev/nvidiaN
//         device nodes (a container given GPUs has the nodes; /proc may be the host's).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/checks/check.h"
#include "core/kernel/user_tasks.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "headroom sizes /dev/shm, fds, tasks and locked memory for the shape given; on a host "
    "that cannot run it, those sizes are for hardware that is not there";

/// Entries of `dir` whose name satisfies `keep`; nullopt when `dir` cannot be listed.
template <typename Keep>
std::optional<std::uint64_t> count_entries(const std::filesystem::path& dir, Keep keep) {
  std::error_code error;
  std::filesystem::directory_iterator entry(dir, error);
  if (error) return std::nullopt;
  std::uint64_t count = 0;
  for (const std::filesystem::directory_iterator end; entry != end; entry.increment(error)) {
    if (error) break;
    if (keep(entry->path().filename().string())) ++count;
  }
  return count;
}

struct GpusSeen {
  std::uint64_t count = 0;
  std::string source;
};

GpusSeen visible_gpus(const Context& context) {
  const std::filesystem::path driver = context.root.proc() / "driver" / "nvidia" / "gpus";
  if (auto count = count_entries(driver, [](const std::string&) { return true; });
      count && *count > 0) {
    return {*count, "/proc/driver/nvidia/gpus"};
  }
  const auto nodes = count_entries(context.root.dev(""), [](const std::string& name) {
    return name.size() > 6 && name.starts_with("nvidia") &&
           std::all_of(name.begin() + 6, name.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
  });
  return {nodes.value_or(0), "/dev/nvidiaN"};
}

std::optional<std::uint64_t> allowed_cpus(const Context& context) {
  auto text = context.root.read(context.process_file("status"));
  return text ? cpus_allowed(*text) : std::nullopt;
}

}  // namespace

std::vector<Finding> check_job_shape(const CheckInput& input) {
  const CheckOptions& options = input.options;
  if (options.gpus == 0 && options.workers == 0) return {};  // no shape given: nothing to hold
  Finding finding;
  finding.id = "job.shape";
  finding.why = std::string(kWhy);
  std::vector<std::string> problems;
  std::vector<std::string> fits;

  if (options.workers > 0) {
    const std::uint64_t workers = options.ranks * options.workers;
    finding.add("workers", workers, "count");
    if (const auto cpus = allowed_cpus(input.context)) {
      finding.add("cpus_allowed", *cpus, "count");
      if (workers > *cpus) {
        problems.push_back(
            fmt::format("{} DataLoader worker{} ({} rank{} x --workers {}) on {} CPU{}", workers,
                        workers == 1 ? "" : "s", options.ranks, options.ranks == 1 ? "" : "s",
                        options.workers, *cpus, *cpus == 1 ? "" : "s"));
        finding.remedy.push_back(fmt::format(
            "size num_workers to the CPUs the job may use: at most {} per rank here (nproc "
            "shows them); more workers than CPUs contend and each adds memory and fds",
            std::max<std::uint64_t>(1, *cpus / options.ranks)));
      } else {
        fits.push_back(
            fmt::format("{} worker{} on {} CPUs", workers, workers == 1 ? "" : "s", *cpus));
      }
    }
  }
  if (options.gpus > 0) {
    const GpusSeen seen = visible_gpus(input.context);
    finding.add("gpus_seen", seen.count, "count");
    finding.add("gpus_source", seen.source);
    if (seen.count < options.gpus) {
      problems.push_back(fmt::format("--gpus {} but {} GPU{} visible ({})", options.gpus,
                                     seen.count, seen.count == 1 ? " is" : "s are", seen.source));
      finding.remedy.push_back(
          seen.count == 0
              ? "run the check where the job runs (on the GPU node, in its container with the "
                "GPUs passed: docker run --gpus all, a pod with nvidia.com/gpu limits)"
              : fmt::format("pass the GPUs this host has: --gpus {}", seen.count));
    } else {
      fits.push_back(fmt::format("{} of {} GPUs", options.gpus, seen.count));
    }
  }
  if (!problems.empty()) {
    finding.severity = Severity::kWarn;
    finding.summary =
        fmt::format("the job's shape does not fit this host: {}", fmt::join(problems, "; "));
  } else if (fits.empty()) {
    return {unknown_finding(finding.id, "", "neither the CPUs nor the GPUs could be counted")};
  } else {
    finding.severity = Severity::kOk;
    finding.summary = fmt::format("the job's shape fits this host: {}", fmt::join(fits, ", "));
  }
  return {finding};
}

}  // namespace headroom
