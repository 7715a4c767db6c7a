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
// mounts"), while every other path and probe of the sample goes on. The thread
// is kept for the next sample (a watch samples every second: starting threads
// was a tenth of its CPU time).
//
// A path whose lookup cannot reach a server or a user-space daemon is measured
// on the sampling thread instead: every mount on its way is of a local type
// (lookup_stays_local: tmpfs, ext4, xfs, ...; the mount table is re-read when it
// changes) and it is looked up following no symlink (a symlink could lead
// anywhere: such a path goes to its thread). Handing a statfs to a thread and
// back was a fifth of a watch's CPU time at one sample a second.

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/kernel/mountinfo.h"
#include "core/sample/sample_probes.h"
#include "core/threads.h"
#include "core/units.h"

namespace headroom {

/// One filesystem's probe thread and what it hands back. The thread lives as long as the
/// memo that asked for it (a long watch starts it once, not once a sample) and serves one
/// request at a time: for each of its paths, the resolved path and statvfs, or why not.
struct PendingStatfs {
  struct Answer {
    std::filesystem::path real;  ///< canonical, under the root prefix
    Result<FsStats> stats = fail(Error::invalid("not probed"));
  };
  std::mutex mutex;
  std::condition_variable finished;  ///< the answers are in
  std::condition_variable asked;     ///< a request (or quit) for the thread
  bool done = true;                  ///< no request outstanding: the answers are the last ones
  bool requested = false;
  bool quit = false;
  std::vector<std::filesystem::path> paths;
  std::vector<Answer> answers;  ///< in the order of the paths given
  std::chrono::steady_clock::time_point started;

  /// The thread's loop: answers each request until told to quit. The thread owns what
  /// it uses (this state, shared), so it may outlive the sample and the memo: a statfs
  /// on a dead mount can block it for minutes. The Syscalls of a front end are static.
  void serve(const Syscalls* syscalls) {
    std::unique_lock lock(mutex);
    for (;;) {
      asked.wait(lock, [this] { return requested || quit; });
      if (quit) return;
      requested = false;
      const std::vector<std::filesystem::path> asked_paths = std::move(paths);
      lock.unlock();
      std::vector<Answer> found;
      found.reserve(asked_paths.size());
      for (const std::filesystem::path& path : asked_paths) {
        Answer answer;
        std::error_code error;
        answer.real = std::filesystem::canonical(path, error);
        // A lookup error is said without the path: the sample names the watched one.
        answer.stats = error ? fail(Error{Error::Code::kNotFound, error.message()})
                             : syscalls->statvfs(answer.real);
        found.push_back(std::move(answer));
      }
      lock.lock();
      answers = std::move(found);
      done = true;
      finished.notify_all();
    }
  }

  /// Tells the thread to end once it is idle (or once its statfs returns).
  void stop() {
    {
      const std::lock_guard lock(mutex);
      quit = true;
    }
    asked.notify_all();
  }
};

StatfsProber::StatfsProber(std::shared_ptr<PendingStatfs> state) : state_(std::move(state)) {}
StatfsProber::StatfsProber(StatfsProber&& other) noexcept = default;
StatfsProber& StatfsProber::operator=(StatfsProber&& other) noexcept {
  if (this != &other) {
    if (state_) state_->stop();
    state_ = std::move(other.state_);
  }
  return *this;
}
StatfsProber::~StatfsProber() {
  if (state_) state_->stop();
}

namespace {

/// Asks `prober` (idle: done) to measure `paths` (host paths under the root prefix).
void ask(PendingStatfs& prober, std::vector<std::filesystem::path> paths,
         std::chrono::steady_clock::time_point now) {
  {
    const std::lock_guard lock(prober.mutex);
    prober.paths = std::move(paths);
    prober.started = now;
    prober.done = false;
    prober.requested = true;
  }
  prober.asked.notify_one();
}

/// A new prober with its thread started, or nullptr when the system refused a thread.
std::shared_ptr<PendingStatfs> start_prober(const Syscalls* syscalls) {
  auto state = std::make_shared<PendingStatfs>();
  auto thread = try_start_thread([state, syscalls] { state->serve(syscalls); });
  if (!thread) return nullptr;
  thread->detach();
  return state;
}

/// What a group gets when no thread could be started for it: statfs on this one could
/// hang on a dead mount, so its paths are not measured this time; the sample says why,
/// and the next one retries.
std::shared_ptr<PendingStatfs> refused(std::size_t count,
                                       std::chrono::steady_clock::time_point now) {
  auto state = std::make_shared<PendingStatfs>();
  state->started = now;
  state->answers.resize(count);
  for (PendingStatfs::Answer& answer : state->answers) {
    answer.stats = fail(
        Error{Error::Code::kIo, "no thread to run statfs on (a task limit: ulimit -u, pids.max)"});
  }
  return state;
}

/// The group's paths measured on this thread, when each lookup stays on local filesystems
/// and crosses no symlink; nullptr when one does not (the group's thread then resolves
/// them all).
std::shared_ptr<PendingStatfs> measured_here(const Syscalls& syscalls,
                                             const std::vector<MountEntry>& mounts,
                                             const std::vector<std::filesystem::path>& hosts) {
  auto state = std::make_shared<PendingStatfs>();
  state->answers.reserve(hosts.size());
  for (const std::filesystem::path& host : hosts) {
    if (!lookup_stays_local(mounts, host)) return nullptr;
    auto stats = syscalls.statvfs_no_symlinks(host);
    if (!stats) return nullptr;
    // A watched path is normalized (watched_paths); with no symlink on its way it is its
    // own canonical form.
    state->answers.push_back({host, *stats});
  }
  return state;
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
                        std::map<std::string, StatfsProber>& probers, Sample& sample) {
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
    // A filesystem no longer watched (a reloaded config) gives its thread back.
    std::erase_if(probers, [&](const auto& entry) { return !groups.contains(entry.first); });
    const auto now = context.syscalls->monotonic();
    // The table is this process's view only for the live root seen from here.
    const bool may_measure_here =
        table != nullptr && context.root.is_live() && context.pid == "self";
    for (auto& [key, group] : groups) {
      auto known = probers.find(key);
      if (known != probers.end()) {
        PendingStatfs& prober = known->second.state();
        std::unique_lock lock(prober.mutex);
        if (!prober.done) {  // still in the statfs an earlier sample asked for
          group.pending = known->second.shared();
          group.was_stuck = true;
          continue;
        }
      }
      std::vector<std::filesystem::path> hosts;
      for (std::size_t index : group.members) hosts.push_back(context.root.host(paths[index].path));
      if (may_measure_here) {
        group.pending = measured_here(*context.syscalls, *table, hosts);
        if (group.pending) continue;
      }
      if (known == probers.end()) {
        auto started = start_prober(context.syscalls);
        if (!started) {
          group.pending = refused(group.members.size(), now);
          continue;
        }
        known = probers.emplace(key, StatfsProber(std::move(started))).first;
      }
      group.pending = known->second.shared();
      ask(*group.pending, std::move(hosts), now);
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
      // A prober stuck before this sample stays stuck in it, even if it answers meanwhile:
      // its answers are to an older request.
      const bool done = !group.was_stuck && pending.done;
      for (std::size_t at = 0; at < group.members.size(); ++at) {
        const std::size_t index = group.members[at];
        FilesystemSample& filesystem = measured_paths[index];
        filesystem = done ? measured(context, table, paths[index], pending.answers[at])
                          : stuck_sample(table, paths[index], pending, now);
        if (!filesystem.ok && failed++ == 0) first_error = filesystem.error->message;
        hung += filesystem.stuck ? 1 : 0;
      }
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
