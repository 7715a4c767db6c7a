// fd.limit and fd.system: RLIMIT_NOFILE of the job against what PyTorch's
// default "file_descriptor" sharing strategy keeps open, and the system-wide
// file handles (file-nr) against fs.file-max.
//
// The estimate (docs/checks.md, "fd.limit"), for the main process of one rank,
// which is where the corpus fd_limit scenario ran out (ulimit -n 256):
//   need = 64 (interpreter, libraries, logs, dataset files)
//        + 4 x workers (index queue pipe, worker sentinel, result queue share)
//        + workers x prefetch x 2 (each tensor received from a worker keeps one
//          fd open while it lives; a batch is assumed to be 2 tensors, data and label)
//        + 10 (torch 1.13's DataLoader opens 10 files to probe the limit on error)
// Every batch the loop keeps alive holds its fds too, which is why a soft limit
// at the common default of 1024 is a warning whenever workers are used.
#include <fmt/format.h>

#include <algorithm>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/probes/file_nr.h"
#include "core/probes/limits.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::uint64_t kBaseFds = 64;
constexpr std::uint64_t kFdsPerWorker = 4;
constexpr std::uint64_t kTensorsPerBatch = 2;
constexpr std::uint64_t kTorchProbeFds = 10;
// The soft limit most distributions and container runtimes start processes with.
constexpr std::uint64_t kCommonDefault = 1024;
// What the remedies raise the limit to, unless the estimate asks for more.
constexpr std::uint64_t kRecommended = 65536;
constexpr double kSystemWarnPercent = 85.0;
constexpr double kSystemCriticalPercent = 95.0;

std::uint64_t estimated_need(const CheckOptions& options) {
  return kBaseFds + kFdsPerWorker * options.workers +
         options.workers * options.prefetch * kTensorsPerBatch + kTorchProbeFds;
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
  const std::uint64_t need = estimated_need(options);
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
  finding.add("estimated_need", need, "count");
  finding.add("workers", options.workers, "count");
  finding.add("prefetch", options.prefetch, "count");
  finding.add("tensors_per_batch_assumed", kTensorsPerBatch, "count");
  finding.add("source", source);
  const std::string estimate = fmt::format(
      "estimated need {} = {} base + {} x {} workers + {} workers x {} prefetch x {} tensors + {}",
      need, kBaseFds, kFdsPerWorker, options.workers, options.workers, options.prefetch,
      kTensorsPerBatch, kTorchProbeFds);
  const std::uint64_t target = std::max(kRecommended, need);
  if (limit->soft < need) {
    finding.severity = Severity::kCritical;
    finding.summary =
        fmt::format("open files limit {} is below the job's {}", limit_text(limit->soft), estimate);
    finding.remedy = raise_remedies(input.runtime, *limit, target);
    if (limit->hard < need) {
      finding.remedy.insert(finding.remedy.begin(),
                            fmt::format("the hard limit {} is below the need too: raising it "
                                        "takes privilege (see below)",
                                        limit_text(limit->hard)));
    }
  } else if (options.workers > 0 && limit->soft <= kCommonDefault) {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "open files limit {} (hard {}) covers the {}, but each batch the loop keeps alive holds "
        "its fds too: about {} kept tensors exhaust it",
        limit_text(limit->soft), limit_text(limit->hard), estimate, limit->soft - need);
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
  const std::uint64_t job_need = input.options.ranks * estimated_need(input.options);
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
