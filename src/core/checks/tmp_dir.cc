// tmp.space and tmp.socket (tmp.exec is tmp_exec.cc): the temp dir Python's tempfile resolves to
// (with its silent fallback, see kernel/tempdir.h), its room, and whether multiprocessing can make
// its "pymp-XXXXXXXX" dir and bind its Listener's AF_UNIX socket there. What each outcome does to a
// PyTorch 1.13 job was reproduced in ../shared/corpus (tmp_full): a fallback is silent, no usable
// candidate makes every DataLoader worker's feeder thread fail with "No usable
// temporary directory found" and the training loop hang.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/checks/tmp.h"
#include "core/kernel/tempdir.h"
#include "core/units.h"

namespace headroom {

namespace {

// Below this many free inodes a busy /tmp (one dir and socket per worker) is close to failing.
constexpr std::uint64_t kLowInodes = 1000;

struct TmpState {
  const CheckInput& input;
  TempdirResolution resolution;
  std::optional<TempdirCandidate> chosen;
  const std::vector<MountEntry>* mounts = nullptr;
};

std::string describe_candidate(const TmpState& state, const CandidateOutcome& outcome) {
  std::string text = fmt::format("{}: {}", outcome.candidate.path.string(), outcome.describe());
  const auto stats =
      state.input.context.syscalls->statvfs(state.input.context.root.host(outcome.candidate.path));
  if (stats) {
    text += fmt::format(" ({} free of {}, {} free inodes{})", format_bytes(stats->avail_bytes),
                        format_bytes(stats->total_bytes), stats->free_inodes,
                        stats->read_only ? ", read-only" : "");
  }
  return text;
}

std::vector<std::string> runtime_tmp_remedies(const Runtime& runtime) {
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      return {
          "give the container its own /tmp: docker run --tmpfs /tmp:rw,exec,size=1g,mode=1777 ... "
          "(or -v /path/on/host/tmp:/tmp)"};
    case RuntimeKind::kKubernetes:
      return {
          "mount an emptyDir at /tmp (needed with readOnlyRootFilesystem): volumes: [{name: "
          "tmp, emptyDir: {sizeLimit: 1Gi}}] and volumeMounts: [{name: tmp, mountPath: /tmp}]"};
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      break;
  }
  return {};
}

// The remedies shared by tmp.space and tmp.socket when the temp dir is in
// trouble; `full_dir` is a dir to free space in, when one is known.
std::vector<std::string> tmp_remedies(const TmpState& state,
                                      std::optional<std::filesystem::path> full_dir = {}) {
  std::vector<std::string> lines;
  const std::filesystem::path& job_dir = state.input.options.dirs.empty()
                                             ? state.input.context.working_directory
                                             : state.input.options.dirs.front();
  // Suggest the job's own dir only when Python could use it.
  if (try_tempdir(state.input.context.root, {job_dir.string(), job_dir, "dir"}).usable()) {
    lines.push_back(fmt::format(
        "point Python at a dir with space before the job starts: mkdir -p {0}/.tmp && export "
        "TMPDIR={0}/.tmp",
        job_dir.string()));
  } else {
    lines.emplace_back(
        "point Python at a writable dir with space before the job starts: export "
        "TMPDIR=/path/with/space");
  }
  for (const CandidateOutcome& outcome : state.resolution.tried) {
    if (!full_dir && (outcome.error == ENOSPC || outcome.error == EDQUOT)) {
      full_dir = outcome.candidate.path;
    }
  }
  if (full_dir) {
    lines.push_back(
        fmt::format("free space in {0}: headroom du {0}, then headroom clean --tmp "
                    "(removes leftover pymp-*/torch_* dirs of dead jobs)",
                    full_dir->string()));
  }
  for (std::string& line : runtime_tmp_remedies(state.input.runtime)) lines.push_back(line);
  return lines;
}

Finding tmp_space(const TmpState& state) {
  const Context& context = state.input.context;
  Finding finding;
  finding.id = "tmp.space";
  finding.why =
      "multiprocessing (every DataLoader worker with the default file_descriptor sharing) makes "
      "a pymp-XXXXXXXX dir and a socket in Python's temp dir; with no usable temp dir the "
      "workers' feeder threads fail and training hangs, and a silent fallback moves temp files "
      "to a dir nobody sized for them";
  std::string skipped;
  for (const CandidateOutcome& outcome : state.resolution.tried) {
    if (outcome.usable()) continue;
    if (!skipped.empty()) skipped += "; ";
    skipped += describe_candidate(state, outcome);
  }
  finding.add("candidates_tried", static_cast<std::uint64_t>(state.resolution.tried.size()),
              "count");
  if (!skipped.empty()) finding.add("skipped_candidates", skipped);

  if (!state.chosen) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "no usable temp dir: Python raises \"{}\"; DataLoader workers fail and training hangs",
        state.resolution.python_error());
    finding.remedy = tmp_remedies(state);
    return finding;
  }
  const TempdirCandidate& chosen = *state.chosen;
  finding.subject = chosen.path.string();
  finding.add("temp_dir", chosen.path.string());
  finding.add("temp_dir_origin", chosen.origin);
  const auto stats = context.syscalls->statvfs(context.root.host(chosen.path));
  const MountEntry* mount =
      state.mounts != nullptr ? find_mount(*state.mounts, chosen.path) : nullptr;
  if (stats) add_filesystem_evidence(finding, *stats, mount);
  const std::string room = stats ? fmt::format("{} free, {} free inodes",
                                               format_bytes(stats->avail_bytes), stats->free_inodes)
                                 : "free space unknown";
  finding.summary = fmt::format("Python's temp dir is {} ({})", chosen.path.string(), room);

  const CandidateOutcome& first = state.resolution.tried.front();
  if (!first.usable()) {
    finding.severity = Severity::kWarn;
    if (first.candidate.origin == "default" || first.candidate.origin == "cwd") {
      finding.summary =
          fmt::format("{} is not usable ({}): Python silently falls back to {} ({})",
                      first.candidate.path.string(), first.describe(), chosen.path.string(), room);
    } else {
      finding.summary = fmt::format(
          "{}={} is not usable ({}): Python's tempfile skips it and uses {} ({}); tools that read "
          "${} themselves, or a tempfile.tempdir pinned to it, fail with PermissionError or "
          "[Errno 28]",
          first.candidate.origin, first.candidate.listed, first.describe(), chosen.path.string(),
          room, first.candidate.origin);
    }
    finding.remedy = tmp_remedies(state);
    finding.remedy.insert(
        finding.remedy.begin() + 1,
        fmt::format("or make the fallback explicit: export TMPDIR={}", chosen.path.string()));
    return finding;
  }
  if (stats && (stats->used_percent() >= state.input.options.warn_percent ||
                (stats->total_inodes != 0 && stats->free_inodes < kLowInodes))) {
    finding.severity = Severity::kWarn;
    finding.summary =
        fmt::format("Python's temp dir {} is nearly full: {} used ({})", chosen.path.string(),
                    format_percent(stats->used_percent()), room);
    finding.remedy = tmp_remedies(state, chosen.path);
  }
  return finding;
}

Finding tmp_socket(const TmpState& state) {
  Finding finding;
  finding.id = "tmp.socket";
  finding.why =
      "each DataLoader worker (file_descriptor sharing) starts a multiprocessing Listener on "
      "<tempdir>/pymp-XXXXXXXX/listener-XXXXXXXX to hand batch fds to the main process; when it "
      "cannot, the worker's feeder thread dies and the training loop hangs";
  if (!state.chosen) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "multiprocessing cannot create its Listener socket: \"FileNotFoundError: [Errno 2] {}\"",
        state.resolution.python_error());
    finding.remedy = tmp_remedies(state);
    return finding;
  }
  const std::filesystem::path& dir = state.chosen->path;
  finding.subject = dir.string();
  const SocketProbe probe = probe_multiprocessing_socket(state.input.context.root, dir);
  finding.add("temp_dir", dir.string());
  finding.add("socket_path_length", static_cast<std::uint64_t>(probe.python_path_length), "bytes");
  finding.add("socket_path_limit", static_cast<std::uint64_t>(kMaxUnixSocketPath), "bytes");
  const MountEntry* mount = state.mounts != nullptr ? find_mount(*state.mounts, dir) : nullptr;
  if (mount != nullptr) {
    finding.add("mount_point", mount->mount_point);
    finding.add("read_only", mount->read_only());
  }
  if (probe.step == "length") {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "the temp dir {} is too long for AF_UNIX: multiprocessing's socket path would be {} "
        "bytes, the limit is {} (\"OSError: AF_UNIX path too long\")",
        dir.string(), probe.python_path_length, kMaxUnixSocketPath);
    finding.remedy.push_back(fmt::format(
        "use a temp dir of at most {} characters: mkdir -p /tmp/$USER && export TMPDIR=/tmp/$USER",
        kMaxUnixSocketPath - (probe.python_path_length - dir.native().size())));
    return finding;
  }
  if (!probe.ok()) {
    finding.severity = Severity::kCritical;
    finding.add("failed_step", probe.step);
    finding.summary =
        fmt::format("multiprocessing cannot make its socket in {}: {} failed with {} (errno {})",
                    dir.string(), probe.step, std::strerror(probe.error), probe.error);
    finding.remedy = tmp_remedies(state);
    return finding;
  }
  finding.summary = fmt::format(
      "multiprocessing can make its dir and bind its socket in {} (path {} of {} bytes)",
      dir.string(), probe.python_path_length, kMaxUnixSocketPath);
  return finding;
}

}  // namespace

std::vector<Finding> check_tmp(const CheckInput& input) {
  auto mounts = read_mountinfo(input.context);
  TmpState state{input, resolve_tempdir(input.context), std::nullopt, mounts ? &*mounts : nullptr};
  state.chosen = state.resolution.chosen();
  std::vector<Finding> findings{tmp_space(state), tmp_socket(state)};
  if (auto exec = tmp_exec(input, state.chosen, state.mounts)) findings.push_back(std::move(*exec));
  return findings;
}

}  // namespace headroom
