// The "filesystem" probe: for every watched path, the mount holding it
// (mountinfo) and its capacity (statvfs). A path that vanished or cannot be
// resolved is a FilesystemSample with ok = false and the reason, never a
// failed sample: a checkpoint dir deleted mid-run must be reported, not fatal.

#include <fmt/format.h>

#include "core/probes/mountinfo.h"
#include "core/sample/sample_probes.h"

namespace headroom {

namespace {

FilesystemSample sample_path(const Context& context, const std::vector<MountEntry>* mounts,
                             const std::filesystem::path& path, FsRole role) {
  FilesystemSample filesystem;
  filesystem.path = path.string();
  filesystem.role = role;
  std::error_code error;
  const std::filesystem::path real = std::filesystem::canonical(context.root.host(path), error);
  if (error) {
    filesystem.error = fmt::format("{}: {}", path.string(), error.message());
    return filesystem;
  }
  const auto stats = context.syscalls->statvfs(real);
  if (!stats) {
    filesystem.error = stats.error().message;
    return filesystem;
  }
  filesystem.ok = true;
  filesystem.total_bytes = stats->total_bytes;
  filesystem.free_bytes = stats->free_bytes;
  filesystem.avail_bytes = stats->avail_bytes;
  filesystem.total_inodes = stats->total_inodes;
  filesystem.avail_inodes = stats->free_inodes;
  if (mounts != nullptr) {
    if (const MountEntry* mount = find_mount(*mounts, context.root.display(real))) {
      filesystem.mountpoint = mount->mount_point;
      filesystem.fstype = mount->fstype;
      filesystem.device = mount->device;
    }
  }
  if (filesystem.mountpoint.empty()) filesystem.mountpoint = filesystem.path;
  return filesystem;
}

}  // namespace

void sample_filesystems(const Context& context,
                        const std::vector<std::pair<std::filesystem::path, FsRole>>& paths,
                        const Result<const std::vector<MountEntry>*>& mounts, Sample& sample) {
  run_probe(context, sample, "filesystem", [&]() -> Result<void> {
    std::size_t failed = 0;
    std::string first_error;
    for (const auto& [path, role] : paths) {
      FilesystemSample filesystem = sample_path(context, mounts ? *mounts : nullptr, path, role);
      if (!filesystem.ok && failed++ == 0) first_error = filesystem.error;
      sample.filesystems.push_back(std::move(filesystem));
    }
    if (!mounts) return fail(mounts.error());
    if (failed > 0) {
      return fail(Error{Error::Code::kNotFound, fmt::format("{} of {} paths not watchable: {}",
                                                            failed, paths.size(), first_error)});
    }
    return {};
  });
}

}  // namespace headroom
