// tmp.exec: can native code compiled into the temp dir be loaded from it?
// torch.compile (inductor) writes the kernels it compiles under
// <tempdir>/torchinductor_<user> (TORCHINDUCTOR_CACHE_DIR overrides it, and
// Triton's kernels go there too when inductor drives Triton) and dlopens them;
// standalone Triton keeps its cache in ~/.triton/cache (TRITON_CACHE_DIR). On a
// noexec mount the loader refuses them: "failed to map segment from shared
// object". Hardening guides (CIS) mount /tmp noexec, and so does Docker's
// --tmpfs unless told "exec". Reproduced with a shared object built into a
// noexec tmpfs and loaded with ctypes (tests/integration/test_check_tmp.py).
#include <fmt/format.h>

#include "core/checks/tmp.h"
#include "core/inuse/user_names.h"

namespace headroom {

namespace {

/// One place compiled kernels are loaded from.
struct KernelDir {
  std::string name;            ///< evidence prefix: "inductor_cache", "triton_cache"
  std::string what;            ///< "torch.compile (inductor)", "Triton"
  std::filesystem::path path;  ///< as the job sees it
  std::string origin;          ///< the variable that set it, or "default"
  const MountEntry* mount = nullptr;
};

/// getpass.getuser(), which inductor names its dir after: LOGNAME, USER,
/// LNAME, USERNAME, then the password entry of the uid.
std::string python_user(const Context& context) {
  for (const char* variable : {"LOGNAME", "USER", "LNAME", "USERNAME"}) {
    if (auto value = context.env(variable)) return *value;
  }
  if (context.syscalls == nullptr) return "user";
  return UserNames(context).name(context.syscalls->effective_uid());
}

std::vector<KernelDir> kernel_dirs(const Context& context,
                                   const std::optional<TempdirCandidate>& temp_dir) {
  std::vector<KernelDir> dirs;
  if (auto set = context.env("TORCHINDUCTOR_CACHE_DIR")) {
    dirs.push_back({"inductor_cache", "torch.compile (inductor)", *set, "TORCHINDUCTOR_CACHE_DIR"});
  } else if (temp_dir) {
    dirs.push_back({"inductor_cache", "torch.compile (inductor)",
                    temp_dir->path / ("torchinductor_" + python_user(context)), "default"});
  }
  if (auto set = context.env("TRITON_CACHE_DIR")) {
    dirs.push_back({"triton_cache", "Triton", *set, "TRITON_CACHE_DIR"});
  } else if (auto home = context.env("HOME")) {
    dirs.push_back(
        {"triton_cache", "Triton", std::filesystem::path(*home) / ".triton/cache", "default"});
  }
  return dirs;
}

/// A dir of the job's on a mount that allows exec, for the remedy; empty when none is known.
std::string exec_allowed_dir(const CheckInput& input, const std::vector<MountEntry>& mounts) {
  std::vector<std::filesystem::path> choices = input.options.dirs;
  choices.push_back(input.context.working_directory);
  if (auto home = input.context.env("HOME")) choices.emplace_back(*home);
  for (const std::filesystem::path& dir : choices) {
    const MountEntry* mount = find_mount(mounts, dir);
    if (mount != nullptr && !mount->no_exec() && !mount->read_only()) return dir.string();
  }
  return {};
}

std::vector<std::string> exec_remedies(const CheckInput& input,
                                       const std::vector<MountEntry>& mounts,
                                       const std::vector<const KernelDir*>& refused) {
  std::vector<std::string> lines;
  const std::string base = exec_allowed_dir(input, mounts);
  const std::string dir = base.empty() ? "/path/on/an/exec/mount" : base;
  std::string exports;
  for (const KernelDir* refusal : refused) {
    const std::string variable =
        refusal->name == "inductor_cache" ? "TORCHINDUCTOR_CACHE_DIR" : "TRITON_CACHE_DIR";
    const std::string leaf = refusal->name == "inductor_cache" ? "torchinductor" : "triton";
    exports +=
        fmt::format("{}export {}={}/.cache/{}", exports.empty() ? "" : " && ", variable, dir, leaf);
  }
  lines.push_back("keep compiled kernels on a mount that allows exec, before the job starts: " +
                  exports);
  switch (input.runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      lines.emplace_back(
          "or give the container an exec-allowed /tmp: docker run --tmpfs "
          "/tmp:rw,exec,size=1g,mode=1777 (Docker mounts --tmpfs noexec unless told exec)");
      break;
    case RuntimeKind::kKubernetes:
      lines.emplace_back(
          "or mount an emptyDir at /tmp (emptyDir volumes allow exec): volumes: [{name: tmp, "
          "emptyDir: {sizeLimit: 1Gi}}] and volumeMounts: [{name: tmp, mountPath: /tmp}]");
      break;
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      lines.push_back(fmt::format(
          "or, if the host's policy allows it: sudo mount -o remount,exec {} (noexec is often a "
          "deliberate hardening; prefer the variables above)",
          refused.front()->mount->mount_point));
      break;
  }
  return lines;
}

}  // namespace

std::optional<Finding> tmp_exec(const CheckInput& input,
                                const std::optional<TempdirCandidate>& temp_dir,
                                const std::vector<MountEntry>* mounts) {
  std::vector<KernelDir> dirs = kernel_dirs(input.context, temp_dir);
  // No temp dir and no home: nothing is compiled anywhere (tmp.space is critical).
  if (dirs.empty()) return std::nullopt;
  Finding finding;
  finding.id = "tmp.exec";
  finding.why =
      "torch.compile compiles kernels into <tempdir>/torchinductor_<user> and loads them with "
      "dlopen, Triton loads its kernels from its cache dir; on a noexec mount the loader refuses "
      "them (\"failed to map segment from shared object\") and the compiled model fails at its "
      "first call";
  if (mounts == nullptr) {
    return unknown_finding("tmp.exec", "", "the mount table could not be read");
  }
  std::vector<const KernelDir*> refused;
  for (KernelDir& dir : dirs) {
    dir.mount = find_mount(*mounts, dir.path);
    finding.add(dir.name + "_dir", dir.path.string());
    finding.add(dir.name + "_origin", dir.origin);
    if (dir.mount == nullptr) continue;
    finding.add(dir.name + "_mount_point", dir.mount->mount_point);
    finding.add(dir.name + "_noexec", dir.mount->no_exec());
    if (dir.mount->no_exec()) refused.push_back(&dir);
  }
  finding.subject = dirs.front().path.string();
  if (refused.empty()) {
    std::string places;
    for (const KernelDir& dir : dirs) {
      places += fmt::format("{}{}", places.empty() ? "" : " and ", dir.path.string());
    }
    finding.summary = fmt::format("compiled kernels can be loaded: {} {} on mounts that allow exec",
                                  places, dirs.size() == 1 ? "is" : "are");
    return finding;
  }
  finding.severity = Severity::kWarn;
  const KernelDir& first = *refused.front();
  finding.subject = first.path.string();
  finding.summary = fmt::format(
      "{} is mounted noexec: {} writes its compiled kernels to {} and cannot load them "
      "(\"failed to map segment from shared object\")",
      first.mount->mount_point, first.what, first.path.string());
  if (refused.size() > 1) {
    const KernelDir& second = *refused[1];
    finding.summary += fmt::format("; {} too, in {} on {}", second.what, second.path.string(),
                                   second.mount->mount_point);
  }
  finding.remedy = exec_remedies(input, *mounts, refused);
  return finding;
}

}  // namespace headroom
