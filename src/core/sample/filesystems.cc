// The "filesystem" probe: for every watched path, the mount holding it
// (mountinfo) and its capacity (statvfs). A path that vanished or cannot be
// resolved is a FilesystemSample with ok = false and the reason, never a
// failed sample: a checkpoint dir deleted mid-run must be reported, not fatal.
//
// A hung NFS server or FUSE daemon makes statfs (and the path lookup) sleep in
// the kernel for minutes, uninterruptibly: a thread stuck there cannot be
// cancelled. So each filesystem is probed on a thread of its own and waited for
// until a deadline; one that misses it is reported stuck, left to finish on its
// own, and not asked again until it has answered (node_exporter's "stuck
// mounts"), while every other path and probe of the sample goes on.

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/kernel/mountinfo.h"
#include "core/sample/sample_probes.h"
#include "core/threads.h"
#include "core/units.h"

namespace headroom {

/// What a filesystem's probe thread hands back: for each of its paths, the resolved
/// path and statvfs, or why not.
struct PendingStatfs {
  struct Answer {
    std::filesystem::path real;  ///< canonical, under the root prefix
    Result<FsStats> stats = fail(Error::invalid("not probed"));
  };
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::vector<Answer> answers;  ///< in the order of the paths given
  std::chrono::steady_clock::time_point started;
};

namespace {

/// Starts the probe of `paths` (host paths under the root prefix) on a detached thread.
/// The thread owns what it uses: it may outlive the sample, and the Syscalls of a
/// front end are static.
std::shared_ptr<PendingStatfs> start_probe(const Syscalls* syscalls,
                                           std::vector<std::filesystem::path> paths,
                                           std::chrono::steady_clock::time_point now) {
  auto pending = std::make_shared<PendingStatfs>();
  pending->started = now;
  const std::size_t count = paths.size();
  auto probe = try_start_thread([pending, syscalls, paths = std::move(paths)] {
    std::vector<PendingStatfs::Answer> answers;
    for (const std::filesystem::path& path : paths) {
      PendingStatfs::Answer answer;
      std::error_code error;
      answer.real = std::filesystem::canonical(path, error);
      // A lookup error is said without the path: the sample names the watched one.
      answer.stats = error ? fail(Error{Error::Code::kNotFound, error.message()})
                           : syscalls->statvfs(answer.real);
      answers.push_back(std::move(answer));
    }
    {
      std::lock_guard lock(pending->mutex);
      pending->answers = std::move(answers);
      pending->done = true;
    }
    pending->finished.notify_all();
  });
  if (probe) {
    probe->detach();
  } else {
    // A task limit refused the thread. statfs on this one could hang on a dead mount, so
    // the paths are not measured this time; the sample says why, and the next one retries.
    const std::lock_guard lock(pending->mutex);
    pending->answers.resize(count);
    for (PendingStatfs::Answer& answer : pending->answers) {
      answer.stats = fail(Error{Error::Code::kIo,
                                "no thread to run statfs on (a task limit: ulimit -u, pids.max)"});
    }
    pending->done = true;
  }
  return pending;
}

/// The filesystem a path is on by its name alone (no file system call, so it cannot
/// hang): the key that groups paths into one probe, and a stuck path's labels.
const MountEntry* lexical_mount(const std::vector<MountEntry>* mounts,
                                const std::filesystem::path& path) {
  return mounts == nullptr ? nullptr : find_mount(*mounts, path);
}

FilesystemSample measured(const Context& context, const std::vector<MountEntry>* mounts,
                          const WatchedPath& watched, const PendingStatfs::Answer& answer) {
  FilesystemSample filesystem;
  filesystem.path = watched.path.string();
  filesystem.role = watched.role;
  filesystem.expect_mount = watched.expect_mount;
  if (!answer.stats) {
    filesystem.error = answer.stats.error();
    if (answer.real.empty()) {
      filesystem.error->message = fmt::format("{}: {}", filesystem.path, filesystem.error->message);
    }
    return filesystem;
  }
  const FsStats& stats = *answer.stats;
  filesystem.ok = true;
  filesystem.total_bytes = stats.total_bytes;
  filesystem.free_bytes = stats.free_bytes;
  filesystem.avail_bytes = stats.avail_bytes;
  filesystem.total_inodes = stats.total_inodes;
  filesystem.avail_inodes = stats.free_inodes;
  const std::filesystem::path shown = context.root.display(answer.real);
  if (const MountEntry* mount = lexical_mount(mounts, shown)) {
    filesystem.mountpoint = mount->mount_point;
    filesystem.fstype = mount->fstype;
    filesystem.device = mount->device;
    filesystem.source = mount->source;
    filesystem.is_mount = mount->mount_point == shown.string();
  }
  if (filesystem.mountpoint.empty()) filesystem.mountpoint = filesystem.path;
  return filesystem;
}

FilesystemSample stuck_sample(const std::vector<MountEntry>* mounts, const WatchedPath& watched,
                              const PendingStatfs& pending,
                              std::chrono::steady_clock::time_point now) {
  FilesystemSample filesystem;
  filesystem.path = watched.path.string();
  filesystem.role = watched.role;
  filesystem.expect_mount = watched.expect_mount;
  filesystem.stuck = true;
  if (const MountEntry* mount = lexical_mount(mounts, watched.path)) {
    filesystem.mountpoint = mount->mount_point;
    filesystem.fstype = mount->fstype;
    filesystem.device = mount->device;
    filesystem.source = mount->source;
  } else {
    filesystem.mountpoint = filesystem.path;
  }
  filesystem.error = Error{
      Error::Code::kIo,
      fmt::format(
          "statfs of {} has not answered for {}: the mount hangs (NFS server or FUSE daemon gone?)",
          filesystem.mountpoint,
          format_duration(
              std::chrono::duration_cast<std::chrono::seconds>(now - pending.started)))};
  return filesystem;
}

}  // namespace

void sample_filesystems(const Context& context, const std::vector<WatchedPath>& paths,
                        const Result<const std::vector<MountEntry>*>& mounts,
                        std::chrono::milliseconds timeout,
                        std::map<std::string, std::shared_ptr<PendingStatfs>>& stuck,
                        Sample& sample) {
  run_probe(context, sample, "filesystem", [&]() -> Result<void> {
    const std::vector<MountEntry>* table = mounts ? *mounts : nullptr;
    // One probe per filesystem (by the mount its name is on): 300 dirs on one disk
    // cost one thread, and a hung mount holds up only its own paths.
    struct Group {
      std::vector<std::size_t> members;  ///< indexes into `paths`
      std::shared_ptr<PendingStatfs> pending;
      bool was_stuck = false;
    };
    std::map<std::string, Group> groups;
    for (std::size_t index = 0; index < paths.size(); ++index) {
      const MountEntry* mount = lexical_mount(table, paths[index].path);
      groups[mount != nullptr ? mount->mount_point : std::string()].members.push_back(index);
    }
    const auto now = context.syscalls->monotonic();
    for (auto& [key, group] : groups) {
      if (const auto found = stuck.find(key); found != stuck.end()) {
        std::lock_guard lock(found->second->mutex);
        if (!found->second->done) {
          group.pending = found->second;
          group.was_stuck = true;
          continue;
        }
        stuck.erase(found);  // it answered at last: ask afresh
      }
      std::vector<std::filesystem::path> hosts;
      for (std::size_t index : group.members) hosts.push_back(context.root.host(paths[index].path));
      group.pending = start_probe(context.syscalls, std::move(hosts), now);
    }
    // The deadline is shared: n hung mounts cost one timeout, not n.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<FilesystemSample> measured_paths(paths.size());
    std::size_t failed = 0;
    std::size_t hung = 0;
    std::string first_error;
    for (auto& [key, group] : groups) {
      PendingStatfs& pending = *group.pending;
      std::unique_lock lock(pending.mutex);
      if (!group.was_stuck) {
        pending.finished.wait_until(lock, deadline, [&] { return pending.done; });
      }
      const bool done = pending.done;
      for (std::size_t at = 0; at < group.members.size(); ++at) {
        const std::size_t index = group.members[at];
        FilesystemSample& filesystem = measured_paths[index];
        filesystem = done ? measured(context, table, paths[index], pending.answers[at])
                          : stuck_sample(table, paths[index], pending, now);
        if (!filesystem.ok && failed++ == 0) first_error = filesystem.error->message;
        hung += filesystem.stuck ? 1 : 0;
      }
      if (!done) stuck[key] = group.pending;
    }
    for (FilesystemSample& filesystem : measured_paths) {
      sample.filesystems.push_back(std::move(filesystem));
    }
    if (!mounts) return fail(mounts.error());
    if (hung > 0) {
      return fail(Error{Error::Code::kIo, fmt::format("{} of {} paths on a hung mount: {}", hung,
                                                      paths.size(), first_error)});
    }
    if (failed > 0) {
      return fail(Error{Error::Code::kNotFound, fmt::format("{} of {} paths not watchable: {}",
                                                            failed, paths.size(), first_error)});
    }
    return {};
  });
}

}  // namespace headroom
