// memory.commit: will the kernel let the job commit and map the memory it
// needs, however much RAM is free? Three sources, one verdict (the worst):
// - The overcommit policy (kernel/overcommit.h) with CommitLimit and
//   Committed_AS of /proc/meminfo. In mode 2 (strict) fork() charges the child
//   with a copy of the parent's writable private memory, so a big main process
//   cannot start its DataLoader workers: "OSError: [Errno 12] Cannot allocate
//   memory" at fork while RAM is free. Mode 0 (heuristic) refuses only single
//   requests larger than RAM + swap, mode 1 nothing.
// - RLIMIT_AS ("Max address space", ulimit -v) counts every mapping, touched or
//   not: `import torch` alone maps about 621 MiB, every thread adds its stack
//   and a malloc arena, and CUDA reserves a virtual range covering the GPUs'
//   and the host's memory when it creates a context.
// - vm.max_map_count, the mappings one process may hold.
// Thresholds and measurements: docs/checks.md, "memory.commit".

#include <fmt/format.h>

#include <algorithm>

#include "core/checks/memory.h"
#include "core/checks/remedy.h"
#include "core/kernel/kernel_tasks.h"
#include "core/kernel/limits.h"
#include "core/kernel/meminfo.h"
#include "core/kernel/overcommit.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "Linux can refuse memory that is free. Under strict overcommit (vm.overcommit_memory=2) a "
    "fork that would commit more than CommitLimit fails, and every DataLoader worker is a fork "
    "of the main process: \"OSError: [Errno 12] Cannot allocate memory\". An address-space "
    "limit (ulimit -v) counts mappings that are never touched: import torch, thread stacks, "
    "CUDA's reservation; it fails with \"failed to map segment from shared object\", MemoryError "
    "or \"can't start new thread\".";

// The smallest RLIMIT_AS under which `import torch` works: 636035 KiB, measured
// with Debian's torch 1.13 by bisecting `ulimit -v` (docs/checks.md). A job needs
// more: threads, DataLoader buffers, the model.
constexpr std::uint64_t kTorchImportAddressSpace = 636035 * kKiB;
// Below this a CUDA context cannot reserve its unified virtual address range
// (docs/checks.md argues the number; no GPU was available to measure it).
constexpr std::uint64_t kCudaAddressSpace = 64 * kGiB;
// DEFAULT_MAX_MAP_COUNT of include/linux/mm.h (USHRT_MAX - 5).
constexpr std::uint64_t kDefaultMaxMapCount = 65530;

// docker run has no --ulimit for RLIMIT_AS ("invalid ulimit type: as").
constexpr RlimitNames kAddressSpaceNames{"-v", kKiB, "as", "LimitAS", "", "AS"};

/// The verdict of one source; the finding adds them up.
struct Part {
  Severity severity = Severity::kOk;
  std::string summary;
  std::vector<std::string> remedy;
};

/// How to give the job `need` more room to commit: the policy, the ratio, swap, the workers.
std::vector<std::string> commit_remedies(const CheckInput& input, const Overcommit& overcommit,
                                         const Meminfo& info, std::uint64_t committed,
                                         std::uint64_t room, std::uint64_t need) {
  const CheckOptions& options = input.options;
  std::vector<std::string> lines;
  lines.emplace_back(
      "start the DataLoader workers before loading large data, or use "
      "DataLoader(..., multiprocessing_context='forkserver') so that no worker is a fork of the "
      "big main process");
  if (need > 0 && options.workers > 0) {
    lines.push_back(fmt::format("or fewer DataLoader workers: num_workers={} fits the room left",
                                workers_that_fit(options, room)));
  }
  lines.emplace_back(
      "or return to the default policy: sudo sysctl -w vm.overcommit_memory=0, persisted with "
      "echo 'vm.overcommit_memory = 0' | sudo tee /etc/sysctl.d/90-overcommit.conf");
  if (need > 0) {
    // CommitLimit = (MemTotal - hugetlb) x ratio / 100 + SwapTotal, or overcommit_kbytes + swap.
    const std::uint64_t wanted = committed + with_margin(need);
    const std::uint64_t swap = info.swap_total_bytes;
    const std::uint64_t base = wanted > swap ? wanted - swap : 0;
    if (overcommit.kbytes != 0) {
      lines.push_back(
          fmt::format("or raise the fixed commit limit: sudo sysctl -w "
                      "vm.overcommit_kbytes={}",
                      (base + kKiB - 1) / kKiB));
    } else {
      const std::uint64_t memory =
          info.total_bytes - std::min(info.total_bytes, info.field("Hugetlb").value_or(0));
      const std::uint64_t ratio = memory > 0 ? (base * 100 + memory - 1) / memory : 100;
      lines.push_back(
          fmt::format("or raise CommitLimit to {}: sudo sysctl -w vm.overcommit_ratio={} (now {})",
                      format_bytes(wanted), std::max(ratio, overcommit.ratio_percent),
                      overcommit.ratio_percent));
    }
  }
  lines.emplace_back("adding swap raises CommitLimit by its size, even if it is never used");
  if (input.runtime.in_container) {
    lines.emplace_back(
        "vm.overcommit_* are the host's settings (not namespaced): the host's admins change them");
  }
  return lines;
}

Part commit_part(const CheckInput& input, const Overcommit& overcommit, const Meminfo& info,
                 Finding& finding) {
  finding.add("overcommit_memory", static_cast<std::uint64_t>(overcommit.mode));
  finding.add("overcommit_policy", std::string(to_string(overcommit.mode)));
  finding.add("overcommit_ratio", static_cast<double>(overcommit.ratio_percent), "percent");
  if (overcommit.kbytes != 0)
    finding.add("overcommit_limit_bytes", overcommit.kbytes * kKiB, "bytes");
  const auto limit = info.field("CommitLimit");
  const auto committed = info.field("Committed_AS");
  if (limit && committed) {
    finding.add("commit_limit_bytes", *limit, "bytes");
    finding.add("committed_as_bytes", *committed, "bytes");
  }
  const std::string policy =
      fmt::format("vm.overcommit_memory={}", static_cast<int>(overcommit.mode));
  if (overcommit.mode != OvercommitMode::kStrict) {
    return {Severity::kOk,
            fmt::format("overcommit {} ({}): forks are not held to CommitLimit",
                        to_string(overcommit.mode), policy),
            {}};
  }
  if (!limit || !committed) {
    return {Severity::kWarn,
            fmt::format("strict overcommit ({}); /proc/meminfo has no CommitLimit to measure the "
                        "room left",
                        policy),
            commit_remedies(input, overcommit, info, 0, 0, 0)};
  }
  const std::uint64_t room = *limit > *committed ? *limit - *committed : 0;
  finding.add("commit_room_bytes", room, "bytes");
  const std::string left =
      fmt::format("{} left under CommitLimit {} ({} committed)", format_bytes(room),
                  format_bytes(*limit), format_bytes(*committed));
  const std::uint64_t need = job_memory_need(input.options);
  Part part;
  if (need == 0) {
    part.severity = Severity::kWarn;
    part.summary = fmt::format(
        "strict overcommit ({}): {}; every DataLoader worker commits a copy of the main "
        "process's private memory when it is forked (give --worker-rss for a verdict)",
        policy, left);
  } else {
    finding.add("job_need_bytes", need, "bytes");
    const std::string commits = fmt::format("the job commits about {} ({})", format_bytes(need),
                                            job_memory_formula(input.options));
    if (need > room) {
      part.severity = Severity::kCritical;
      part.summary = fmt::format(
          "strict overcommit ({}): {} but only {}: forking DataLoader workers fails with "
          "\"OSError: [Errno 12] Cannot allocate memory\" while RAM is free",
          policy, commits, left);
    } else if (with_margin(need) > room) {
      part.severity = Severity::kWarn;
      part.summary = fmt::format("strict overcommit ({}): {}; {}: less than 10% to spare", policy,
                                 commits, left);
    } else {
      part.summary = fmt::format("strict overcommit ({}): {}; {}", policy, left, commits);
    }
  }
  if (part.severity != Severity::kOk) {
    part.remedy = commit_remedies(input, overcommit, info, *committed, room, need);
  }
  return part;
}

std::vector<std::string> address_space_remedies(const CheckInput& input, const Limit& limit) {
  std::vector<std::string> lines =
      raise_limit_remedies(input.runtime, kAddressSpaceNames, limit, std::nullopt);
  if (input.runtime.slurm || limit.hard != Limit::kUnlimited) {
    lines.emplace_back(
        "on a batch system the job request sets it: Grid Engine's h_vmem is the RLIMIT_AS of "
        "every process of the job (request qsub -l h_vmem=64G or more per slot for a GPU job); "
        "Slurm copies the submitting shell's ulimit -v (PropagateResourceLimits, default ALL) and "
        "sets --mem x VSizeFactor% when the site sets VSizeFactor (--mem alone sets only "
        "RLIMIT_RSS, which Linux ignores)");
  }
  return lines;
}

Part address_space_part(const CheckInput& input, const Limit& limit, Finding& finding) {
  finding.add("address_space_limit_bytes", limit_value(limit.soft), "bytes");
  finding.add("address_space_hard_limit_bytes", limit_value(limit.hard), "bytes");
  if (limit.soft == Limit::kUnlimited) {
    return {Severity::kOk, "no address-space limit (ulimit -v unlimited)", {}};
  }
  const std::string limited =
      fmt::format("address space limited to {} ({})", format_bytes(limit.soft),
                  ulimit_command(kAddressSpaceNames, limit.soft));
  Part part;
  part.severity = Severity::kCritical;
  if (limit.soft < kTorchImportAddressSpace) {
    part.summary = fmt::format(
        "{}: below the {} that import torch alone maps: it fails with \"failed to map segment "
        "from shared object\", MemoryError or std::bad_alloc",
        limited, format_bytes(kTorchImportAddressSpace));
  } else if (input.options.gpus > 0 && limit.soft < kCudaAddressSpace) {
    part.summary = fmt::format(
        "{} with {} GPU(s): below {}, CUDA cannot reserve the virtual range it maps over the "
        "GPUs' and the host's memory when it creates a context, and the first CUDA call fails "
        "with out of memory",
        limited, input.options.gpus, format_bytes(kCudaAddressSpace));
  } else {
    part.severity = Severity::kWarn;
    part.summary = fmt::format(
        "{}: every thread adds its stack and a malloc arena, CUDA a large reservation; threads "
        "fail with \"can't start new thread\" and allocations with MemoryError long before RAM "
        "runs out",
        limited);
  }
  part.remedy = address_space_remedies(input, limit);
  return part;
}

Part map_count_part(std::uint64_t max_map_count, Finding& finding) {
  finding.add("max_map_count", max_map_count, "count");
  if (max_map_count >= kDefaultMaxMapCount) {
    return {Severity::kOk, fmt::format("vm.max_map_count {}", max_map_count), {}};
  }
  return {Severity::kWarn,
          fmt::format("vm.max_map_count is {}, below the kernel's default {}: a process with "
                      "many mappings (libraries, memory-mapped datasets, allocator segments) "
                      "fails with ENOMEM",
                      max_map_count, kDefaultMaxMapCount),
          {fmt::format("sudo sysctl -w vm.max_map_count={} (or 262144 for memory-mapped "
                       "datasets), persisted in /etc/sysctl.d/",
                       kDefaultMaxMapCount)}};
}

}  // namespace

Finding check_memory_commit(const CheckInput& input) {
  const Context& context = input.context;
  Finding finding;
  finding.id = "memory.commit";
  finding.why = std::string(kWhy);
  std::vector<Part> parts;
  std::vector<std::string> unreadable;
  auto overcommit = read_overcommit(context);
  auto info = read_meminfo(context);
  if (!overcommit) {
    unreadable.push_back(overcommit.error().message);
  } else if (!info) {
    unreadable.push_back(info.error().message);
  } else {
    parts.push_back(commit_part(input, *overcommit, *info, finding));
  }
  if (auto limit = read_limit(context, "Max address space")) {
    parts.push_back(address_space_part(input, *limit, finding));
  } else {
    unreadable.push_back(limit.error().message);
  }
  if (auto count = read_sysctl_number(context, "sys/vm/max_map_count")) {
    parts.push_back(map_count_part(*count, finding));
  } else {
    unreadable.push_back(count.error().message);
  }
  std::string reasons;
  for (const std::string& reason : unreadable) reasons += (reasons.empty() ? "" : "; ") + reason;
  if (parts.empty()) return unknown_finding(finding.id, "", reasons);
  if (!reasons.empty()) finding.add("unreadable", reasons);

  // Worst first; the summary names every part that is not ok, or all of them when all are.
  std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
    return rank(a.severity) > rank(b.severity);
  });
  finding.severity = parts.front().severity;
  for (const Part& part : parts) {
    if (part.severity == Severity::kOk && finding.severity != Severity::kOk) continue;
    finding.summary += (finding.summary.empty() ? "" : "; ") + part.summary;
    finding.remedy.insert(finding.remedy.end(), part.remedy.begin(), part.remedy.end());
  }
  return finding;
}

}  // namespace headroom
