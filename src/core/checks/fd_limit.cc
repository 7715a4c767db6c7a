// fd.limit and fd.system: RLIMIT_NOFILE of the job against what PyTorch's
// default "file_descriptor" sharing strategy keeps open, and the system-wide
// file handles (file-nr) against fs.file-max.
//
// The estimate (docs/checks.md, "fd.limit"), for the main process of one rank,
// calibrated against real DataLoaders under a real RLIMIT_NOFILE (PyTorch 1.13,
// bench/python/RESULTS.md: the smallest limit under which each of 7 shapes
// completes, 19 to 67):
//   each live tensor received from a worker keeps one fd (torch's
//   THPStorage_newSharedFd dups the passed fd and keeps it with the mapping);
//   per worker its index queue's pipe (both ends stay in the parent) and its
//   sentinel, and a connection to its resource sharer while a tensor is passed;
//   the result queue's pipe; while a tensor arrives, the sharer's socket, the
//   passed fd and its dup; batches that arrive out of order wait in the parent.
//   minimum = base + 4 x W + 2 + 2 x S     the loop's batch and the previous one: the
//             job cannot run below it (every measured shape needed at least this)
//   typical = 64 + 4 x W + 5 + (W x P + 2) x S    every batch in flight waiting in the
//             parent, and a script's logs, datasets and CUDA device files
// S = tensor storages per batch (data and label: 2 unless the Python module counted
// them), base = the fds the process holds before the loader starts (8 unless counted).
// Below the minimum: critical. Below the typical need, or at the common default of
// 1024 with workers (each batch the loop keeps alive holds its fds too): warn.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/file_nr.h"
#include "core/kernel/limits.h"
#include "core/units.h"

namespace headroom {

namespace {

// python3 with torch 1.13 imported holds 6 fds (stdin, stdout, stderr and the
// interpreter's own); a job's script holds more (logs, dataset files, CUDA).
constexpr std::uint64_t kInterpreterFds = 8;
constexpr std::uint64_t kTypicalBaseFds = 64;
constexpr std::uint64_t kFdsPerWorker = 4;
constexpr std::uint64_t kResultQueueFds = 2;
constexpr std::uint64_t kTransferFds = 3;
constexpr std::uint64_t kBatchesInHand = 2;
constexpr std::uint64_t kTensorsPerBatch = 2;
// The soft limit most distributions and container runtimes start processes with.
constexpr std::uint64_t kCommonDefault = 1024;
// What the remedies raise the limit to, unless the estimate asks for more.
constexpr std::uint64_t kRecommended = 65536;
constexpr double kSystemWarnPercent = 85.0;
constexpr double kSystemCriticalPercent = 95.0;

struct FdNeed {
  std::uint64_t tensors = kTensorsPerBatch;  ///< S
  std::uint64_t minimum = 0;                 ///< below it the job fails
  std::uint64_t typical = 0;                 ///< below it the job may fail
  std::string formula;                       ///< the typical need, spelled out
};

FdNeed estimated_need(const CheckOptions& options) {
  FdNeed need;
  need.tensors = options.tensors_per_batch.value_or(kTensorsPerBatch);
  const std::uint64_t workers = options.workers;
  const std::uint64_t loader = workers == 0 ? 0 : kFdsPerWorker * workers + kResultQueueFds;
  const std::uint64_t transfer = workers == 0 ? 0 : kTransferFds;
  const std::uint64_t in_hand = workers == 0 ? 0 : kBatchesInHand * need.tensors;
  const std::uint64_t in_flight = workers * options.prefetch * need.tensors;
  need.minimum = options.base_fds.value_or(kInterpreterFds) + loader + in_hand;
  const std::uint64_t base = std::max(options.base_fds.value_or(0), kTypicalBaseFds);
  need.typical = base + loader + transfer + in_hand + in_flight;
  need.formula = fmt::format(
      "{} = {} base + {} x {} workers + {} (queues) + ({} x prefetch {} + {}) batches x {} "
      "tensors",
      need.typical, base, kFdsPerWorker, workers, workers == 0 ? 0 : kResultQueueFds + kTransferFds,
      workers, options.prefetch, workers == 0 ? 0 : kBatchesInHand, need.tensors);
  return need;
}

// How the tools that raise RLIMIT_NOFILE name it.
constexpr RlimitNames kNofileNames{"-n", 1, "nofile", "LimitNOFILE", "nofile", "NOFILE"};

std::vector<std::string> raise_remedies(const Runtime& runtime, const Limit& limit,
                                        std::uint64_t target) {
  std::vector<std::string> lines = raise_limit_remedies(runtime, kNofileNames, limit, target);
  lines.emplace_back(
      "or avoid one fd per tensor: torch.multiprocessing.set_sharing_strategy('file_system') at "
      "the start of the job (named /dev/shm files instead; a crash leaves them: headroom clean)");
  return lines;
}

Finding process_finding(const CheckInput& input) {
  const CheckOptions& options = input.options;
  std::string source;
  auto limit = read_open_files_limit(input.context, source);
  if (!limit) return unknown_finding("fd.limit", "RLIMIT_NOFILE", limit.error().message);
  const FdNeed need = estimated_need(options);
  Finding finding;
  finding.id = "fd.limit";
  finding.subject = "RLIMIT_NOFILE";
  finding.why =
      "with PyTorch's default file_descriptor sharing every tensor a DataLoader worker hands "
      "over keeps one fd open in the receiving process while it lives; at the limit the job dies "
      "with \"RuntimeError: Too many open files. Communication with the workers is no longer "
      "possible\" or \"received 0 items of ancdata\", or hangs";
  finding.add("soft_limit", limit_value(limit->soft), "count");
  finding.add("hard_limit", limit_value(limit->hard), "count");
  finding.add("estimated_need", need.typical, "count");
  finding.add("minimum_need", need.minimum, "count");
  finding.add("workers", options.workers, "count");
  finding.add("prefetch", options.prefetch, "count");
  finding.add("tensors_per_batch", need.tensors, "count");
  finding.add("tensors_per_batch_measured", options.tensors_per_batch.has_value());
  finding.add("source", source);
  const std::string estimate = fmt::format("estimated need {}", need.formula);
  const std::uint64_t target = std::max(kRecommended, need.typical);
  if (limit->soft < need.minimum) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "open files limit {} is below the {} fds the job needs at least ({} for the interpreter, "
        "the DataLoader's queues and the 2 batches the loop holds): it fails with \"Too many "
        "open files\"",
        limit_text(limit->soft), need.minimum, options.base_fds.value_or(kInterpreterFds));
    finding.remedy = raise_remedies(input.runtime, *limit, target);
    if (limit->hard < need.minimum) {
      finding.remedy.insert(finding.remedy.begin(),
                            fmt::format("the hard limit {} is below the need too: raising it "
                                        "takes privilege (see below)",
                                        limit_text(limit->hard)));
    }
  } else if (limit->soft < need.typical) {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "open files limit {} covers the job's minimum of {} but not its {}: batches that arrive "
        "out of order, or that the loop keeps, hold their fds too",
        limit_text(limit->soft), need.minimum, estimate);
    finding.remedy = raise_remedies(input.runtime, *limit, target);
  } else if (options.workers > 0 && limit->soft <= kCommonDefault) {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "open files limit {} (hard {}) covers the {}, but each batch the loop keeps alive holds "
        "its fds too: about {} kept tensors exhaust it",
        limit_text(limit->soft), limit_text(limit->hard), estimate, limit->soft - need.typical);
    finding.remedy = raise_remedies(input.runtime, *limit, target);
  } else {
    finding.summary = fmt::format("open files limit {} (hard {}) covers the {}",
                                  limit_text(limit->soft), limit_text(limit->hard), estimate);
  }
  return finding;
}

Finding system_finding(const CheckInput& input) {
  auto file_nr = read_file_nr(input.context);
  if (!file_nr) return unknown_finding("fd.system", "file-nr", file_nr.error().message);
  Finding finding;
  finding.id = "fd.system";
  finding.subject = "file-nr";
  finding.why =
      "when the kernel's file handles (fs.file-max) run out, every process on the host gets "
      "ENFILE \"Too many open files in system\", whatever its own limit";
  const double percent = file_nr->used_percent();
  const std::uint64_t left =
      file_nr->max > file_nr->allocated ? file_nr->max - file_nr->allocated : 0;
  const std::uint64_t job_need = input.options.ranks * estimated_need(input.options).typical;
  finding.add("allocated_handles", file_nr->allocated, "count");
  finding.add("file_max", file_nr->max, "count");
  finding.add("used_percent", percent, "percent");
  finding.add("job_need", job_need, "count");
  finding.summary = fmt::format("{} of {} system-wide file handles in use ({})", file_nr->allocated,
                                file_nr->max, format_percent(percent));
  if (percent >= kSystemCriticalPercent || left < job_need) {
    finding.severity = Severity::kCritical;
    finding.summary += fmt::format(": {} left, the job's {} ranks need about {}", left,
                                   input.options.ranks, job_need);
  } else if (percent >= kSystemWarnPercent) {
    finding.severity = Severity::kWarn;
  }
  if (finding.severity != Severity::kOk) {
    const std::uint64_t target = 2 * file_nr->max;
    finding.remedy.push_back(
        fmt::format("raise the ceiling: sudo sysctl -w fs.file-max={0} and persist it with echo "
                    "'fs.file-max = {0}' | sudo tee /etc/sysctl.d/90-file-max.conf",
                    target));
    finding.remedy.emplace_back(
        "find the processes holding most fds: for p in /proc/[0-9]*; do echo \"$(ls $p/fd "
        "2>/dev/null | wc -l) $p $(cat $p/comm 2>/dev/null)\"; done | sort -n | tail");
  }
  return finding;
}

}  // namespace

std::vector<Finding> check_fd_limit(const CheckInput& input) {
  return {process_finding(input), system_finding(input)};
}

}  // namespace headroom
