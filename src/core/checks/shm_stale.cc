// shm.stale: segments in /dev/shm and SysV shm that no live process holds,
// and space held by segments already unlinked but still open or mapped.
// "Stale" means only "nobody has it open or mapped" (the in-use index): the
// pid in torch_<pid>_... names the worker that created it, which is often gone
// while the job is healthy (shared/corpus/README.md, section 7). PyTorch's
// file_descriptor strategy unlinks at once, so ls shows nothing while df
// shows /dev/shm full: that space is reported with the pids that hold it.

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <span>

#include "core/checks/check.h"
#include "core/clean/shm_survey.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kId = "shm.stale";
constexpr std::string_view kWhy =
    "Segments left by killed jobs (SIGKILL, OOM kill of the cgroup) keep their memory until "
    "removed; the next job's DataLoader then dies of SIGBUS on a /dev/shm that looks big enough.";
// Below this, stale files are noise (a few sem.* of 32 bytes).
constexpr std::uint64_t kSignificantBytes = kMiB;
constexpr double kSignificantShare = 0.05;

std::string pid_list(std::span<const int> pids) {
  constexpr std::size_t kShown = 8;
  std::string out;
  for (std::size_t i = 0; i < pids.size() && i < kShown; ++i) {
    out += (i == 0 ? "" : ",") + std::to_string(pids[i]);
  }
  if (pids.size() > kShown) out += fmt::format(",... ({} pids)", pids.size());
  return out;
}

}  // namespace

std::vector<Finding> check_shm_stale(const CheckInput& input) {
  const Context& context = input.context;
  // The stale count needs no holder names: /proc is scanned only when the kernel's lease
  // cannot answer for a segment or /dev/shm holds space in unlinked segments.
  auto survey = survey_shm(context, {}, HolderScan::kWhenNeeded);
  if (!survey) return {unknown_finding(std::string(kId), "/dev/shm", survey.error().message)};

  Finding finding;
  finding.id = std::string(kId);
  finding.subject = "/dev/shm";
  finding.why = std::string(kWhy);

  std::uint64_t stale_files = 0;
  std::uint64_t stale_bytes = 0;
  std::uint64_t reclaimable_bytes = 0;  // names `clean --shm` knows
  std::map<std::string, std::uint64_t> stale_by_pattern;
  // No holder seen is not proof when some process could not be inspected (another
  // user's, run unprivileged): such a segment is unknown, not stale (use_proof.h).
  std::uint64_t unknown_files = 0;
  std::uint64_t unknown_bytes = 0;
  for (const ShmEntry& entry : survey->entries) {
    if (use_unknown(entry)) {
      ++unknown_files;
      unknown_bytes += entry.allocated_bytes;
    }
    if (!stale(entry)) continue;
    ++stale_files;
    stale_bytes += entry.allocated_bytes;
    stale_by_pattern[entry.pattern] += entry.allocated_bytes;
    if (entry.pattern != "other") reclaimable_bytes += entry.allocated_bytes;
  }
  std::uint64_t sysv_stale = 0;
  std::uint64_t sysv_stale_bytes = 0;
  for (const SysvSegment& segment : survey->sysv) {
    if (segment.attachments != 0) continue;
    ++sysv_stale;
    sysv_stale_bytes += segment.size_bytes;
  }
  std::uint64_t unlinked_bytes = 0;
  std::vector<int> unlinked_pids;
  for (const UnlinkedSegment& segment : survey->unlinked) {
    unlinked_bytes += segment.size_bytes;
    unlinked_pids.insert(unlinked_pids.end(), segment.holders.begin(), segment.holders.end());
  }
  std::sort(unlinked_pids.begin(), unlinked_pids.end());
  unlinked_pids.erase(std::unique(unlinked_pids.begin(), unlinked_pids.end()), unlinked_pids.end());

  finding.add("stale_files", stale_files, "count");
  finding.add("stale_bytes", stale_bytes, "bytes");
  finding.add("unknown_files", unknown_files, "count");
  finding.add("unknown_bytes", unknown_bytes, "bytes");
  for (const auto& [pattern, bytes] : stale_by_pattern) {
    finding.add("stale_" + pattern + "_bytes", bytes, "bytes");
  }
  finding.add("sysv_stale_segments", sysv_stale, "count");
  finding.add("sysv_stale_bytes", sysv_stale_bytes, "bytes");
  finding.add("unlinked_held_segments", static_cast<std::uint64_t>(survey->unlinked.size()),
              "count");
  finding.add("unlinked_held_bytes", unlinked_bytes, "bytes");
  if (!unlinked_pids.empty()) finding.add("unlinked_held_by_pids", pid_list(unlinked_pids));
  const InUseIndex& index = survey->index;
  finding.add("holders_from", survey->scanned ? "proc" : "lease");
  finding.add("processes_scanned", static_cast<std::uint64_t>(index.processes_scanned()), "count");
  finding.add("processes_unreadable", static_cast<std::uint64_t>(index.unreadable_pids().size()),
              "count");

  const std::uint64_t total_stale = stale_bytes + sysv_stale_bytes;
  auto stats = context.syscalls->statvfs(context.root.dev("shm"));
  const std::uint64_t size = stats ? stats->total_bytes : 0;
  const bool significant = total_stale >= kSignificantBytes ||
                           (size > 0 && static_cast<double>(total_stale) >=
                                            kSignificantShare * static_cast<double>(size));
  const std::uint64_t need = dataloader_shm_need(input.options);

  std::string unlinked_note;
  if (unlinked_bytes > 0) {
    unlinked_note = fmt::format("; {} unlinked but still held by pid {} (freed when they exit)",
                                format_bytes(unlinked_bytes), pid_list(unlinked_pids));
  }
  std::string visibility;
  if (unknown_files > 0) {
    visibility = fmt::format(
        "; {} segment{} ({}) with no holder seen could not be proven unused: other users' "
        "processes could not be inspected (run as root, or as the segments' owner)",
        unknown_files, unknown_files == 1 ? "" : "s", format_bytes(unknown_bytes));
  } else if (!index.unreadable_pids().empty() && !survey->visibility.complete()) {
    // As root, what stays unreadable is another user namespace or a sandbox.
    const std::size_t unreadable = index.unreadable_pids().size();
    visibility = fmt::format(" ({} process{} could not be inspected{})", unreadable,
                             unreadable == 1 ? "" : "es",
                             input.context.syscalls->effective_uid() == 0
                                 ? ", not even as root: pid " + pid_list(index.unreadable_pids())
                                 : ": run as root to be sure");
  }

  if (total_stale == 0) {
    finding.severity = Severity::kOk;
    finding.summary =
        fmt::format("no stale segments in /dev/shm or SysV shm{}{}", unlinked_note, visibility);
    return {finding};
  }
  finding.summary = fmt::format("{} stale segment{} ({}) that no process has open or mapped{}{}{}",
                                stale_files + sysv_stale, stale_files + sysv_stale == 1 ? "" : "s",
                                format_bytes(total_stale),
                                sysv_stale > 0 ? fmt::format(", {} of them SysV", sysv_stale) : "",
                                unlinked_note, visibility);
  finding.severity = significant ? Severity::kWarn : Severity::kOk;
  if (significant && stats) {
    const double used_percent = stats->used_percent();
    const std::uint64_t reachable = stats->used_bytes() + stats->avail_bytes;
    const double without_stale =
        reachable == 0 ? 0.0
                       : 100.0 *
                             static_cast<double>(stats->used_bytes() -
                                                 std::min(stats->used_bytes(), stale_bytes)) /
                             static_cast<double>(reachable);
    const bool pushes_over = used_percent >= input.options.critical_percent &&
                             without_stale < input.options.critical_percent;
    const bool starves_job = need > 0 && stats->avail_bytes < need;
    if (pushes_over || starves_job) {
      finding.severity = Severity::kCritical;
      finding.summary +=
          starves_job ? fmt::format(": /dev/shm has {} free, the job needs {}",
                                    format_bytes(stats->avail_bytes), format_bytes(need))
                      : fmt::format(": /dev/shm is {} full, {} without them",
                                    format_percent(used_percent), format_percent(without_stale));
    }
  }
  if (reclaimable_bytes + sysv_stale_bytes > 0) {
    finding.remedy.push_back(fmt::format(
        "see the plan: headroom clean --shm   then reclaim {}: headroom clean --shm --yes{}",
        format_bytes(reclaimable_bytes + sysv_stale_bytes),
        context.syscalls->effective_uid() == 0 ? " --all-users" : ""));
  }
  if (stale_by_pattern.count("other") > 0) {
    finding.remedy.push_back(fmt::format(
        "{} in files of unknown producers: check `ls -la /dev/shm` and remove them by hand",
        format_bytes(stale_by_pattern["other"])));
  }
  return {finding};
}

}  // namespace headroom
