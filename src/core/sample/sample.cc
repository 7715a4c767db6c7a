#include "core/sample/sample.h"

#include <algorithm>
#include <set>

#include "core/sample/sample_probes.h"

namespace headroom {

std::string_view to_string(FsRole role) {
  switch (role) {
    case FsRole::kDir:
      return "dir";
    case FsRole::kTemp:
      return "tmp";
    case FsRole::kShm:
      return "shm";
  }
  return "dir";
}

double FilesystemSample::used_percent() const {
  return df_used_percent(total_bytes, free_bytes, avail_bytes);
}

double MemorySample::used_percent() const {
  if (total_bytes == 0) return 0.0;
  const std::uint64_t used = total_bytes > available_bytes ? total_bytes - available_bytes : 0;
  return 100.0 * static_cast<double>(used) / static_cast<double>(total_bytes);
}

std::optional<std::pair<double, double>> Sample::memory_left() const {
  if (!memory) return std::nullopt;
  std::pair<double, double> left{static_cast<double>(memory->available_bytes),
                                 static_cast<double>(memory->total_bytes)};
  if (cgroup && cgroup->limit_bytes) {
    const std::uint64_t limit = *cgroup->limit_bytes;
    const std::uint64_t usage = cgroup->usage_bytes;
    const double room = static_cast<double>(limit > usage ? limit - usage : 0);
    if (room < left.first) left = {room, static_cast<double>(limit)};
  }
  return left;
}

const ProbeStatus* Sample::probe(std::string_view name) const {
  for (const ProbeStatus& status : probes) {
    if (status.probe == name) return &status;
  }
  return nullptr;
}

std::vector<WatchedPath> watched_paths(const Context& context, const SampleOptions& options) {
  std::vector<WatchedPath> paths;
  std::map<std::string, std::size_t> seen;
  const auto add = [&](const std::filesystem::path& path, FsRole role, bool expect_mount) {
    std::filesystem::path normal = path.lexically_normal();
    // "X/" is X: one row, one series (lexically_normal keeps the trailing separator).
    if (!normal.has_filename() && normal != normal.root_path()) normal = normal.parent_path();
    const auto [at, added] = seen.emplace(normal.string(), paths.size());
    if (added) {
      paths.push_back({normal, role, expect_mount});
    } else {
      paths[at->second].expect_mount |= expect_mount;
    }
  };
  const auto absolute = [&](const std::filesystem::path& dir) {
    return dir.is_absolute() ? dir : context.working_directory / dir;
  };
  for (const std::filesystem::path& dir : options.mounts) add(absolute(dir), FsRole::kDir, true);
  for (const std::filesystem::path& dir : options.dirs) add(absolute(dir), FsRole::kDir, false);
  if (options.temp_dir) {
    const auto tmpdir = context.env("TMPDIR");
    add(tmpdir && tmpdir->front() == '/' ? std::filesystem::path(*tmpdir) : "/tmp", FsRole::kTemp,
        false);
  }
  if (options.shm) add(context.root.display(context.root.dev("shm")), FsRole::kShm, false);
  return paths;
}

namespace {

/// The same paths by their text (path's == compares component by component).
bool same_paths(const std::vector<std::filesystem::path>& a,
                const std::vector<std::filesystem::path>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x.native() == y.native(); });
}

}  // namespace

Result<Sample> take_sample(const Context& context, const SampleOptions& options, SampleMemo* memo) {
  if (context.syscalls == nullptr) return fail(Error::invalid("context has no syscalls"));
  Sample sample;
  sample.time = context.syscalls->now();
  sample.monotonic = context.syscalls->monotonic();
  const ScopedOpenFiles kept_files(memo != nullptr ? &memo->files : current_open_files());
  SampleMemo own_memo;  // what one sample without a memo uses once
  SampleMemo& kept = memo != nullptr ? *memo : own_memo;
  // One mount table serves the filesystem and cgroup probes.
  const auto mounts = kept.mounts.current(context);
  if (!kept.watched || !same_paths(kept.watched->mounts, options.mounts) ||
      !same_paths(kept.watched->dirs, options.dirs) || kept.watched->temp_dir != options.temp_dir ||
      kept.watched->shm != options.shm) {
    kept.watched = SampleMemo::Watched{options.mounts, options.dirs, options.temp_dir, options.shm,
                                       watched_paths(context, options)};
  }
  sample_filesystems(context, kept.watched->paths, mounts, options.probe_timeout, kept.probers,
                     sample);
  sample_memory(context, sample);
  sample_pressure(context, sample);
  sample_cgroup(context, options, memo, mounts ? *mounts : nullptr, sample);
  sample_vmstat(context, memo, sample);
  sample_oom_victims(context, memo, sample);
  sample_fds(context, options, sample);
  if (options.shm && options.shm_stale) sample_shm_stale(context, options, memo, sample);
  return sample;
}

}  // namespace headroom
