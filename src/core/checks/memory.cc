// memory.available: will the job's processes fit in the host's memory? Sources:
// /proc/meminfo (MemAvailable: the kernel's estimate of memory usable without
// swapping, mm/page_alloc.c si_mem_available) and /proc/pressure/memory (PSI:
// the share of time tasks stalled waiting for memory). The memory cgroup is
// checked in memory_cgroup.cc.

#include "core/checks/memory.h"

#include <fmt/format.h>

#include <cmath>

#include "core/kernel/meminfo.h"
#include "core/kernel/pressure.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "Every rank and every DataLoader worker is a process with its own resident memory; when "
    "they do not fit, the kernel's OOM killer ends one of them (\"DataLoader worker (pid N) is "
    "killed by signal: Killed\") or the whole job.";

// PSI "full" avg10: the share of the last 10 s in which all non-idle tasks
// stalled on memory at once. Above 10% the host is thrashing noticeably;
// above 40% it is mostly waiting on reclaim and swap.
constexpr double kPressureWarn = 10.0;
constexpr double kPressureCritical = 40.0;

void raise(Finding& finding, Severity severity, std::string summary) {
  if (rank(severity) > rank(finding.severity)) {
    finding.severity = severity;
    finding.summary = std::move(summary);
  }
}

}  // namespace

std::uint64_t job_memory_need(const CheckOptions& options) {
  if (!options.worker_rss) return 0;
  return options.ranks * (options.workers + 1) * *options.worker_rss;
}

std::string job_memory_formula(const CheckOptions& options) {
  if (!options.worker_rss) return "";
  return fmt::format("{} x ({} + 1) x {}", format_count(options.ranks, "rank"),
                     format_count(options.workers, "worker"), format_bytes(*options.worker_rss));
}

std::uint64_t with_margin(std::uint64_t need) {
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(need) * 1.1));
}

std::uint64_t workers_that_fit(const CheckOptions& options, std::uint64_t room) {
  if (!options.worker_rss || *options.worker_rss == 0) return 0;
  const std::uint64_t processes = room / (options.ranks * *options.worker_rss);
  return processes > 1 ? processes - 1 : 0;
}

Finding check_memory_available(const CheckInput& input) {
  const CheckOptions& options = input.options;
  Finding finding;
  finding.id = "memory.available";
  finding.why = std::string(kWhy);
  auto info = read_meminfo(input.context);
  if (!info) return unknown_finding(finding.id, "", info.error().message);

  finding.add("mem_total_bytes", info->total_bytes, "bytes");
  finding.add("mem_available_bytes", info->available_bytes, "bytes");
  if (info->available_estimated) finding.add("mem_available_estimated", true);
  finding.add("swap_total_bytes", info->swap_total_bytes, "bytes");
  finding.add("swap_free_bytes", info->swap_free_bytes, "bytes");
  finding.summary = fmt::format("{} of {} memory available", format_bytes(info->available_bytes),
                                format_bytes(info->total_bytes));

  // No PSI (kernel < 4.20, CONFIG_PSI off, psi=0) is no evidence, not an error.
  if (auto pressure = read_pressure(input.context, "memory")) {
    finding.add("psi_some_avg10", pressure->some.avg10, "percent");
    if (pressure->full) {
      const double full = pressure->full->avg10;
      finding.add("psi_full_avg10", full, "percent");
      finding.add("psi_full_avg60", pressure->full->avg60, "percent");
      const auto stalled = [&](std::string_view how) {
        return fmt::format("memory pressure is {}: all tasks stalled on memory {} of the last 10 s",
                           how, format_percent(full));
      };
      if (full > kPressureCritical) {
        raise(finding, Severity::kCritical, stalled("severe"));
      } else if (full > kPressureWarn) {
        raise(finding, Severity::kWarn, stalled("high"));
      }
    }
  } else {
    finding.add("psi_available", false);
  }

  if (const std::uint64_t need = job_memory_need(options); need > 0) {
    finding.add("job_need_bytes", need, "bytes");
    const std::string formula = job_memory_formula(options);
    const std::uint64_t margin = with_margin(need);
    if (need > info->available_bytes) {
      raise(
          finding, Severity::kCritical,
          fmt::format("the job needs {} ({}) but only {} is available: the OOM killer will end it",
                      format_bytes(need), formula, format_bytes(info->available_bytes)));
    } else if (margin > info->available_bytes) {
      raise(finding, Severity::kWarn,
            fmt::format("the job needs {} ({}); {} is available: less than 10% to spare",
                        format_bytes(need), formula, format_bytes(info->available_bytes)));
    } else if (finding.severity == Severity::kOk) {
      finding.summary =
          fmt::format("{} available; the job needs {} ({})", format_bytes(info->available_bytes),
                      format_bytes(need), formula);
    }
  }

  if (finding.severity != Severity::kOk) {
    if (options.worker_rss && options.workers > 0) {
      finding.remedy.push_back(
          fmt::format("fewer DataLoader workers: num_workers={} fits in what is available now",
                      workers_that_fit(options, info->available_bytes)));
    }
    finding.remedy.emplace_back(
        "find and stop what else uses memory: ps -eo pid,rss,comm --sort=-rss | head");
    if (info->swap_total_bytes == 0) {
      finding.remedy.emplace_back(
          "no swap is configured: a swap file absorbs short peaks (sudo fallocate -l 8G /swapfile "
          "&& sudo mkswap /swapfile && sudo swapon /swapfile)");
    }
  }
  return finding;
}

std::vector<Finding> check_memory(const CheckInput& input) {
  return {check_memory_available(input), check_memory_cgroup(input), check_memory_commit(input)};
}

}  // namespace headroom
