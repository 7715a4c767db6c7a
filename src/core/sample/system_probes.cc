// The per-host probes of a sample: meminfo, PSI, the memory cgroup, vmstat's
// OOM-kill counter and open fds. Each reuses the probe parser under
// core/kernel/ and only copies the numbers `watch` follows.

#include <fmt/format.h>

#include <algorithm>

#include "core/kernel/cgroup.h"
#include "core/kernel/file_nr.h"
#include "core/kernel/kmsg.h"
#include "core/kernel/meminfo.h"
#include "core/kernel/pressure.h"
#include "core/kernel/vmstat.h"
#include "core/sample/sample_probes.h"

namespace headroom {

void sample_memory(const Context& context, Sample& sample) {
  run_probe(context, sample, "meminfo", [&]() -> Result<void> {
    return read_meminfo(context, MeminfoFields::kNamed).map([&](const Meminfo& meminfo) {
      sample.memory = MemorySample{meminfo.total_bytes, meminfo.available_bytes,
                                   meminfo.swap_total_bytes, meminfo.swap_free_bytes};
    });
  });
}

void sample_pressure(const Context& context, Sample& sample) {
  run_probe(context, sample, "pressure", [&]() -> Result<void> {
    return read_pressure(context, "memory").and_then([&](const Pressure& pressure) -> Result<void> {
      if (!pressure.full) {
        return fail(Error{Error::Code::kUnsupported, "memory PSI has no \"full\" line"});
      }
      sample.pressure =
          PressureSample{pressure.some.avg10, pressure.full->avg10, pressure.full->total_us};
      return {};
    });
  });
}

namespace {

/// The memory cgroup read where the memo last located it, when that is recent and the
/// mounts are the same; else (and when its files are gone) located anew.
Result<MemoryCgroup> memory_cgroup(const Context& context, const SampleOptions& options,
                                   SampleMemo* memo, const std::vector<MountEntry>* mounts,
                                   std::chrono::steady_clock::time_point now) {
  if (memo == nullptr) return read_memory_cgroup(context, context.pid, mounts, false);
  const std::uint64_t generation = memo->mounts.generation();
  if (memo->cgroup && memo->cgroup_mounts == generation &&
      now - memo->cgroup_located < options.cgroup_relocate) {
    if (auto cgroup = read_memory_cgroup_at(context, *memo->cgroup, false)) return cgroup;
  }
  memo->cgroup.reset();
  auto located = find_cgroup(context, context.pid, "memory", mounts);
  if (!located) return fail(located.error());
  memo->cgroup = std::move(*located);
  memo->cgroup_located = now;
  memo->cgroup_mounts = generation;
  return read_memory_cgroup_at(context, *memo->cgroup, false);
}

}  // namespace

void sample_cgroup(const Context& context, const SampleOptions& options, SampleMemo* memo,
                   const std::vector<MountEntry>* mounts, Sample& sample) {
  run_probe(context, sample, "cgroup", [&]() -> Result<void> {
    return memory_cgroup(context, options, memo, mounts, sample.monotonic)
        .map([&](const MemoryCgroup& cgroup) {
          sample.cgroup = CgroupSample{};
          sample.cgroup->path = cgroup.path;
          sample.cgroup->limit_bytes = cgroup.effective_limit_bytes;
          sample.cgroup->usage_bytes = cgroup.usage_bytes;
          sample.cgroup->oom_kills = cgroup.oom_kills.value_or(0);
          if (!cgroup.effective_limit_bytes) return;
          // Under a limit, the rule memory_cgroup follows the working set and the
          // cgroup's own PSI: two small reads more, only for a limited cgroup.
          if (auto text = context.root.read(cgroup.directory / "memory.stat", std::size_t{1} << 20,
                                            FileEnd::kShortRead)) {
            const bool v1 = cgroup.version == CgroupVersion::kV1;
            if (const auto inactive =
                    flat_keyed_value(*text, v1 ? "total_inactive_file" : "inactive_file")) {
              sample.cgroup->inactive_file_bytes = *inactive;
            }
          }
          if (auto text = context.root.read(cgroup.directory / "memory.pressure", 4096,
                                            FileEnd::kShortRead)) {
            if (auto pressure = parse_pressure(*text); pressure && pressure->full) {
              sample.cgroup->pressure = PressureSample{pressure->some.avg10, pressure->full->avg10,
                                                       pressure->full->total_us};
            }
          }
        });
  });
}

void sample_vmstat(const Context& context, SampleMemo* memo, Sample& sample) {
  run_probe(context, sample, "vmstat", [&]() -> Result<void> {
    // Asked every sample, so that the log is watched from the first one on.
    const bool quiet = memo != nullptr && !memo->kernel_log.logged_since_last(context);
    if (quiet && memo->system_oom_kills) {
      sample.system_oom_kills = memo->system_oom_kills;
      return {};
    }
    return read_vmstat(context).and_then([&](const Vmstat& vmstat) -> Result<void> {
      if (!vmstat.oom_kill) {
        return fail(Error{Error::Code::kUnsupported, "vmstat has no oom_kill (Linux < 4.13)"});
      }
      sample.system_oom_kills = vmstat.oom_kill;
      return {};
    });
  });
}

void sample_oom_victims(const Context& context, SampleMemo* memo, Sample& sample) {
  if (memo == nullptr) return;
  const auto grew = [](const std::optional<std::uint64_t>& before,
                       const std::optional<std::uint64_t>& now) -> std::uint64_t {
    return before && now && *now > *before ? *now - *before : 0;
  };
  const std::optional<std::uint64_t> cgroup_kills =
      sample.cgroup ? std::optional(sample.cgroup->oom_kills) : std::nullopt;
  const std::uint64_t fresh = std::max(grew(memo->system_oom_kills, sample.system_oom_kills),
                                       grew(memo->cgroup_oom_kills, cgroup_kills));
  memo->system_oom_kills = sample.system_oom_kills;
  memo->cgroup_oom_kills = cgroup_kills;
  if (fresh == 0) return;
  // Only after a kill: the kernel log is up to a few MiB to read and parse.
  run_probe(context, sample, "oom_victims", [&]() -> Result<void> {
    return read_kmsg(context).map([&](const KernelLog& log) {
      const std::vector<OomEvent> events = parse_oom_events(log.records, log.boot_time);
      // At most a handful: a storm of kills is named by its newest.
      constexpr std::uint64_t kShown = 5;
      const std::size_t take = static_cast<std::size_t>(std::min({fresh, kShown}));
      for (std::size_t index = events.size() - std::min(take, events.size()); index < events.size();
           ++index) {
        const OomEvent& event = events[index];
        sample.oom_victims.push_back(
            {event.pid, event.comm,
             event.task_cgroup.empty() ? event.oom_cgroup : event.task_cgroup, event.rss_bytes()});
      }
    });
  });
}

void sample_fds(const Context& context, const SampleOptions& options, Sample& sample) {
  run_probe(context, sample, "fds", [&]() -> Result<void> {
    if (!options.process_fds) {
      return read_file_nr(context).map([&](const FileNr& handles) {
        sample.fds = FdSample{handles.allocated, handles.max, true};
      });
    }
    const std::filesystem::path directory = context.process_file("fd");
    std::error_code error;
    std::uint64_t open = 0;
    for (std::filesystem::directory_iterator entry(directory, error), end; !error && entry != end;
         entry.increment(error)) {
      ++open;
    }
    if (error) return fail(Error::from_errno(error.value(), directory.string()));
    // Counting through a directory fd of our own adds one entry that is not the job's.
    if (context.pid == "self" && open > 0) --open;
    const auto limit = context.syscalls->open_files_limit();
    if (!limit) return fail(limit.error());
    sample.fds = FdSample{open, limit->soft};
    return {};
  });
}

}  // namespace headroom
