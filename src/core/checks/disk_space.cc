// disk.space: free bytes and inodes of the filesystem holding each --dir, and
// whether the job's checkpoints fit.
//
// The checkpoint model (docs/checks.md, "disk.space") is the one capacity rule
// of series/capacity.h, shared with the watch rule checkpoint_space and
// headroom.save_checkpoint: the room for the next save is the free space plus
// what retention frees (the older checkpoints of the series already in the dir,
// beyond the newest max(keep-1, 1), and temps of dead saves); later saves are
// simulated the way save_checkpoint works. Critical when the next save does not
// fit, warn when a later one does not or when the steady state fits only by
// deleting the oldest before writing (a torch.save followed by deletion needs
// (keep+1) x SIZE).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/series/capacity.h"
#include "core/series/series_space.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kId = "disk.space";
constexpr std::string_view kDfCommand =
    "df -h --output=target,fstype,size,avail,pcent -x tmpfs -x devtmpfs -x squashfs -x overlay";

std::uint64_t saturating_multiply(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return a * b;
}

// Raises the finding's severity and makes `summary` its summary when it is the worst so far.
void escalate(Finding& finding, Severity severity, std::string summary) {
  if (rank(severity) > rank(finding.severity)) {
    finding.severity = severity;
    finding.summary = std::move(summary);
  }
}

Severity by_threshold(double percent, const CheckOptions& options) {
  if (percent >= options.critical_percent) return Severity::kCritical;
  if (percent >= options.warn_percent) return Severity::kWarn;
  return Severity::kOk;
}

// `need` 0: no size is known.
std::string bigger_filesystem_remedy(const Runtime& runtime, const std::string& dir,
                                     std::uint64_t need) {
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      return fmt::format("mount a bigger disk there: docker run -v /path/on/big/disk:{} ...", dir);
    case RuntimeKind::kKubernetes:
      return fmt::format(
          "mount a bigger PersistentVolumeClaim{} at {} (volumeMounts: [{{name: ckpt, "
          "mountPath: {}}}])",
          need != 0 ? " of at least " + format_k8s_quantity(need) : "", dir, dir);
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      break;
  }
  return fmt::format(
      "point --dir (and the job's checkpoint dir) at a filesystem with {} free; "
      "list them with: {}",
      need != 0 ? "at least " + format_bytes(need) : "more space", kDfCommand);
}

void add_checkpoint_projection(Finding& finding, const CheckInput& input, const FsStats& stats,
                               const std::filesystem::path& dir) {
  const CheckOptions& options = input.options;
  const std::uint64_t size = *options.checkpoint_bytes;
  auto series = read_active_series(input.context, input.context.root.host(dir));
  const CapacityInput capacity_input{stats.avail_bytes, size,
                                     static_cast<std::size_t>(options.keep),
                                     series ? *series : SeriesOnDisk{}};
  const Capacity capacity = plan_capacity(capacity_input);
  const std::uint64_t peak = saturating_multiply(options.keep + 1, size);
  const std::uint64_t fit = capacity.room_bytes / size;
  std::uint64_t series_bytes = 0;
  for (const SeriesMember& member : capacity_input.series.members) series_bytes += member.bytes;
  finding.add("checkpoint_bytes", size, "bytes");
  finding.add("keep", options.keep, "count");
  finding.add("series", capacity_input.series.name);
  finding.add("series_bytes", series_bytes, "bytes");
  // The room is free space, the save in progress's own bytes and what retention frees first.
  const std::uint64_t saving = capacity_input.series.saving_bytes;
  const std::uint64_t before = stats.avail_bytes + saving;
  finding.add("save_in_progress_bytes", saving, "bytes");
  finding.add("retention_frees_bytes",
              capacity.room_bytes > before ? capacity.room_bytes - before : 0, "bytes");
  finding.add("steady_state_need_bytes", peak, "bytes");
  finding.add("saves_that_fit", fit, "count");
  const Severity severity = capacity.severity();
  escalate(finding, severity, capacity_summary(finding.subject, capacity_input, capacity));
  if (severity == Severity::kOk) return;
  finding.remedy.push_back(fmt::format(
      "remove old checkpoints of earlier runs, keeping the newest {}: headroom prune {} "
      "--keep-last {}",
      options.keep, finding.subject, options.keep));
  if (capacity.frees_first) {
    finding.remedy.push_back(
        "save with headroom.save_checkpoint(state, path, keep=N), which deletes the oldest of "
        "the series before writing when the new one would not fit otherwise");
  }
  if (fit >= 2 && options.keep > 1) {
    finding.remedy.push_back(fmt::format(
        "or keep fewer checkpoints: {} of {} fit with the one being written (--keep {} in the "
        "job's retention)",
        fit - 1, format_bytes(size), fit - 1));
  }
  finding.remedy.push_back(bigger_filesystem_remedy(input.runtime, finding.subject, peak));
}

void add_read_only_remedies(Finding& finding, const Runtime& runtime, const MountEntry* mount) {
  const std::string mount_point = mount != nullptr ? mount->mount_point : finding.subject;
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      finding.remedy.push_back(fmt::format(
          "the container's filesystem is read-only there (docker run --read-only?): mount a "
          "writable volume: docker run -v /path/on/host:{} ...",
          finding.subject));
      break;
    case RuntimeKind::kKubernetes:
      finding.remedy.push_back(fmt::format(
          "readOnlyRootFilesystem or a read-only volume: mount a writable PersistentVolumeClaim "
          "or emptyDir at {}",
          finding.subject));
      break;
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      finding.remedy.push_back(
          fmt::format("if it should be writable: sudo mount -o remount,rw {}", mount_point));
      break;
  }
  finding.remedy.push_back(
      fmt::format("or write to another dir; list filesystems with: {}", kDfCommand));
}

Finding disk_finding(const CheckInput& input, const std::filesystem::path& dir,
                     const std::vector<MountEntry>* mounts) {
  const Context& context = input.context;
  const CheckOptions& options = input.options;
  auto stats = context.syscalls->statvfs(context.root.host(dir));
  if (!stats) return unknown_finding(std::string(kId), dir.string(), stats.error().message);
  const MountEntry* mount = mounts != nullptr ? find_mount(*mounts, dir) : nullptr;

  Finding finding;
  finding.id = std::string(kId);
  finding.subject = dir.string();
  finding.why =
      "a checkpoint save into a full disk kills the job (torch.save: \"PytorchStreamWriter failed "
      "writing file ... file write failed\", then SIGABRT) and leaves a truncated checkpoint "
      "that cannot be resumed from; logs and caches stop being written too";
  add_filesystem_evidence(finding, *stats, mount);
  const std::string where =
      mount != nullptr ? fmt::format(" on {} ({})", mount->mount_point, mount->fstype) : "";
  finding.summary = fmt::format("{}: {} free of {} ({} used){}", finding.subject,
                                format_bytes(stats->avail_bytes), format_bytes(stats->total_bytes),
                                format_percent(stats->used_percent()), where);

  const bool read_only = stats->read_only || (mount != nullptr && mount->read_only());
  if (read_only) {
    escalate(finding, Severity::kCritical,
             fmt::format("{} is on a read-only mount{}: the job cannot write checkpoints there",
                         finding.subject, where));
    add_read_only_remedies(finding, input.runtime, mount);
    return finding;
  }
  const Severity space = by_threshold(stats->used_percent(), options);
  escalate(finding, space,
           fmt::format("{}: {} used, only {} free of {}{}", finding.subject,
                       format_percent(stats->used_percent()), format_bytes(stats->avail_bytes),
                       format_bytes(stats->total_bytes), where));
  const bool has_inodes = stats->total_inodes != 0;
  const Severity inodes =
      has_inodes ? by_threshold(stats->inodes_used_percent(), options) : Severity::kOk;
  escalate(
      finding, inodes,
      fmt::format("{}: {} of inodes used, {} free{}: new files fail with ENOSPC", finding.subject,
                  format_percent(stats->inodes_used_percent()), stats->free_inodes, where));
  if (options.checkpoint_bytes && *options.checkpoint_bytes > 0) {
    add_checkpoint_projection(finding, input, *stats, dir);
  }
  if (finding.severity != Severity::kOk) {
    finding.remedy.insert(finding.remedy.begin(),
                          fmt::format("see what uses the space: headroom du {}", finding.subject));
    if (rank(inodes) > rank(Severity::kOk)) {
      finding.remedy.emplace_back(
          "inodes run out before bytes: remove trees of many small files (extracted datasets, "
          "caches); headroom du counts files too");
    }
    if (!options.checkpoint_bytes) {
      finding.remedy.push_back(bigger_filesystem_remedy(input.runtime, finding.subject, 0));
    }
  }
  return finding;
}

}  // namespace

std::vector<Finding> check_disk_space(const CheckInput& input) {
  auto mounts = read_mountinfo(input.context);
  std::vector<std::filesystem::path> dirs;
  for (const std::filesystem::path& dir : input.options.dirs) {
    std::filesystem::path normal = dir.lexically_normal();
    if (!normal.has_filename() && normal != normal.root_path()) normal = normal.parent_path();
    if (std::find(dirs.begin(), dirs.end(), normal) == dirs.end()) dirs.push_back(normal);
  }
  if (dirs.empty()) dirs.push_back(input.context.working_directory);
  std::vector<Finding> findings;
  findings.reserve(dirs.size());
  for (const std::filesystem::path& dir : dirs) {
    findings.push_back(disk_finding(input, dir, mounts ? &*mounts : nullptr));
  }
  return findings;
}

}  // namespace headroom
