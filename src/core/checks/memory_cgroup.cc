// memory.cgroup: will the job fit under its memory cgroup's limit? Source:
// kernel/cgroup.h (v1 memory.limit_in_bytes / v2 memory.max, usage, the
// oom_kill counter). In a Kubernetes pod a /dev/shm on an emptyDir of medium
// Memory is tmpfs whose pages are charged to the pod's memory cgroup (and
// counted by the kubelet for eviction), so the DataLoader's shared memory
// counts against the same limit as the processes' RSS.

#include <fmt/format.h>

#include "core/checks/memory.h"
#include "core/kernel/cgroup.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "When the processes in a memory cgroup reach its limit the kernel OOM-kills one of them "
    "even if the host has memory to spare: a DataLoader worker dies with \"killed by signal: "
    "Killed\", or the container exits with code 137.";

// How to raise the limit to `bytes`, in the dialect of the runtime.
std::vector<std::string> limit_remedies(const Runtime& runtime, const MemoryCgroup& cgroup,
                                        std::uint64_t bytes, const std::string& display_dir) {
  std::vector<std::string> lines;
  if (runtime.slurm) {
    lines.push_back(
        fmt::format("request more memory from Slurm: sbatch --mem={}G ... (or srun --mem)",
                    (bytes + kGiB - 1) / kGiB));
  }
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      lines.push_back(fmt::format("restart the container with: docker run --memory={} ...",
                                  format_docker_size(bytes)));
      break;
    case RuntimeKind::kKubernetes:
      lines.push_back(
          fmt::format("raise the container's limit in the pod spec: resources: "
                      "{{limits: {{memory: {}}}}}",
                      format_k8s_quantity(bytes)));
      break;
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      if (!runtime.slurm) {
        lines.push_back(fmt::format(
            "raise the cgroup's limit: echo {} > {}/{}", bytes, display_dir,
            cgroup.version == CgroupVersion::kV1 ? "memory.limit_in_bytes" : "memory.max"));
        lines.push_back(
            fmt::format("or run the job in its own scope: systemd-run --scope -p "
                        "MemoryMax={} -- python train.py",
                        format_docker_size(bytes)));
      }
      break;
  }
  return lines;
}

}  // namespace

Finding check_memory_cgroup(const CheckInput& input) {
  const Context& context = input.context;
  const CheckOptions& options = input.options;
  Finding finding;
  finding.id = "memory.cgroup";
  finding.why = std::string(kWhy);

  auto cgroup = read_memory_cgroup(context, context.pid);
  if (!cgroup) {
    if (cgroup.error().code != Error::Code::kNotFound) {
      return unknown_finding(finding.id, "", cgroup.error().message);
    }
    finding.summary = "no memory cgroup limits this process (" + cgroup.error().message + ")";
    finding.add("limited", false);
    return finding;
  }
  const std::string display_dir = context.root.display(cgroup->directory).string();
  finding.subject = cgroup->path;
  finding.add("cgroup_version", std::string(to_string(cgroup->version)));
  finding.add("cgroup_path", cgroup->path);
  finding.add("limited", cgroup->effective_limit_bytes.has_value());
  if (cgroup->effective_limit_bytes) {
    finding.add("limit_bytes", *cgroup->effective_limit_bytes, "bytes");
    if (cgroup->effective_limit_directory != cgroup->directory) {
      finding.add("limit_set_by", context.root.display(cgroup->effective_limit_directory).string());
    }
  }
  finding.add("usage_bytes", cgroup->usage_bytes, "bytes");
  if (cgroup->peak_bytes) finding.add("peak_bytes", *cgroup->peak_bytes, "bytes");
  if (cgroup->swap_limit_bytes) finding.add("swap_limit_bytes", *cgroup->swap_limit_bytes, "bytes");
  if (cgroup->oom_kills) finding.add("oom_kill_count", *cgroup->oom_kills, "count");

  // The job's processes, plus its shared memory when /dev/shm is charged to this cgroup too.
  const std::uint64_t process_need = job_memory_need(options);
  const bool shm_charged = input.runtime.kind == RuntimeKind::kKubernetes &&
                           input.runtime.shm_origin == ShmOrigin::kEmptyDirMemory;
  const std::uint64_t shm_need =
      shm_charged ? dataloader_shm_need(options) + nccl_shm_need(options) : 0;
  const std::uint64_t need = process_need > 0 ? process_need + shm_need : 0;
  if (process_need > 0) finding.add("job_need_bytes", process_need, "bytes");
  if (need > 0 && shm_need > 0) {
    finding.add("shm_charged_bytes", shm_need, "bytes");
    finding.add("total_need_bytes", need, "bytes");
  }
  const std::string shm_note =
      shm_need > 0 ? fmt::format(
                         " (incl. {} of /dev/shm: the emptyDir of medium Memory counts "
                         "against the pod's memory limit)",
                         format_bytes(shm_need))
                   : "";

  if (!cgroup->effective_limit_bytes) {
    finding.summary = fmt::format("memory cgroup {} has no limit; it uses {}", cgroup->path,
                                  format_bytes(cgroup->usage_bytes));
  } else {
    const std::uint64_t limit = *cgroup->effective_limit_bytes;
    const std::uint64_t room = *cgroup->headroom_bytes();
    finding.add("room_bytes", room, "bytes");
    const std::uint64_t margin = with_margin(need);
    const std::string formula = job_memory_formula(options);
    if (need > 0 && need > room) {
      finding.severity = Severity::kCritical;
      finding.summary = fmt::format(
          "the job needs {} ({}){} but the memory cgroup's limit is {} with {} in use: the OOM "
          "killer will end it",
          format_bytes(need), formula, shm_note, format_bytes(limit),
          format_bytes(cgroup->usage_bytes));
    } else if (need > 0 && margin > room) {
      finding.severity = Severity::kWarn;
      finding.summary = fmt::format(
          "the job needs {} ({}){}; the memory cgroup has {} left under its {} limit: less than "
          "10% to spare",
          format_bytes(need), formula, shm_note, format_bytes(room), format_bytes(limit));
    } else {
      finding.summary =
          need > 0 ? fmt::format("memory cgroup limit {}, {} in use; the job needs {}{}",
                                 format_bytes(limit), format_bytes(cgroup->usage_bytes),
                                 format_bytes(need), shm_note)
                   : fmt::format("memory cgroup limit {}, {} in use ({} left)", format_bytes(limit),
                                 format_bytes(cgroup->usage_bytes), format_bytes(room));
    }
    if (finding.severity != Severity::kOk) {
      const std::uint64_t target = cgroup->usage_bytes + margin;
      finding.remedy = limit_remedies(input.runtime, *cgroup, target, display_dir);
      if (shm_need > 0) {
        finding.remedy.emplace_back(
            "the /dev/shm emptyDir's sizeLimit must fit inside that limit "
            "too: raise both together");
      }
      // Each extra worker costs one process per rank plus its prefetched batches if shm is charged.
      const std::uint64_t per_worker =
          options.ranks * (options.worker_rss.value_or(0) +
                           (shm_charged ? options.prefetch * options.batch_bytes.value_or(0) : 0));
      const std::uint64_t base = options.ranks * options.worker_rss.value_or(0);
      if (options.workers > 0 && per_worker > 0) {
        const std::uint64_t fit = room > base ? (room - base) / per_worker : 0;
        finding.remedy.push_back(
            fmt::format("or fewer DataLoader workers: num_workers={} fits under the limit", fit));
      }
    }
  }

  if (cgroup->oom_kills && *cgroup->oom_kills > 0) {
    const std::string past =
        fmt::format("{} process(es) in this cgroup were OOM-killed before", *cgroup->oom_kills);
    if (finding.severity == Severity::kOk) {
      finding.severity = Severity::kWarn;
      finding.summary = past + " (" + finding.summary + ")";
      finding.remedy.emplace_back("see which and when: headroom check --only kernel.oom");
    } else {
      finding.summary += "; " + past;
    }
  }
  return finding;
}

}  // namespace headroom
