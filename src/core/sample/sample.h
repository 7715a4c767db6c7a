#pragma once
// One sample of every resource `watch` follows: the filesystems of the watched
// dirs, the temp dir and /dev/shm, memory and swap, memory PSI, the memory
// cgroup with its OOM-kill counter, open fds against the limit and stale shm
// bytes. Each probe is timed; a failing probe costs only its own fields (and
// shows up in `probes`), never the sample, as node_exporter's collectors do.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/inuse/inuse_index.h"
#include "core/kernel/cgroup.h"
#include "core/kernel/kmsg.h"
#include "core/kernel/mount_table.h"
#include "core/open_files.h"
#include "core/series/capacity.h"

namespace headroom {

/// Why a filesystem is watched. Prometheus users filter on `role` instead of
/// mountpoint regexes, which usually drop /dev/shm and tmpfs.
enum class FsRole { kDir, kTemp, kShm };
/// "dir", "tmp", "shm".
[[nodiscard]] std::string_view to_string(FsRole role);

/// One watched path and the filesystem holding it.
struct FilesystemSample {
  std::string path;  ///< the watched path, as the user named it (host view)
  FsRole role = FsRole::kDir;
  std::string mountpoint;  ///< empty when the path could not be resolved
  std::string fstype;
  std::string device;  ///< "major:minor" of the mount, identifies the filesystem
  std::string source;  ///< the mount's source ("/dev/sda1"): node_exporter's `device` label
  bool ok = false;     ///< false: the path vanished, statvfs failed or hangs; see `error`
  /// statfs (or the path lookup) did not answer within SampleOptions::probe_timeout: a
  /// hung NFS server or FUSE daemon. `mountpoint` is then the lexical guess.
  bool stuck = false;
  /// Configured as a mount point (SampleOptions::mounts); `is_mount` says whether it is one.
  bool expect_mount = false;
  bool is_mount = false;       ///< the path is the mount point of its filesystem
  std::optional<Error> error;  ///< why it was not measured (!ok); its message names the path

  /// error's message, "" when measured.
  [[nodiscard]] std::string why() const { return error ? error->message : std::string(); }
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;   ///< f_bfree: includes the blocks reserved for root
  std::uint64_t avail_bytes = 0;  ///< f_bavail: what a training job can still write
  std::uint64_t total_inodes = 0;
  std::uint64_t avail_inodes = 0;
  /// A watched dir's checkpoint series (the one written last), when the checkpoint
  /// rule is on; see series/series_space.h.
  std::optional<SeriesOnDisk> series;

  [[nodiscard]] std::uint64_t used_bytes() const {
    return total_bytes > free_bytes ? total_bytes - free_bytes : 0;
  }
  /// Used share of the space a writer can reach, 0..100, as df's Use% (and
  /// `check`) computes it: used / (used + avail). Root-reserved blocks count
  /// neither as used nor as available, so 100 is reached when avail is 0.
  [[nodiscard]] double used_percent() const;
};

/// /proc/meminfo: what the page allocator can still give without swapping.
struct MemorySample {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;  ///< MemAvailable
  std::uint64_t swap_total_bytes = 0;
  std::uint64_t swap_free_bytes = 0;
  [[nodiscard]] double used_percent() const;
};

/// /proc/pressure/memory (Linux 4.20+): share of time tasks stalled on memory.
struct PressureSample {
  double some_avg10 = 0;  ///< percent, 0..100
  double full_avg10 = 0;  ///< percent: all non-idle tasks stalled at once
  std::uint64_t full_total_us = 0;
};

/// The memory cgroup of the examined process (v1 or v2).
struct CgroupSample {
  std::string path;                          ///< cgroup path, e.g. "/kubepods/burstable/pod.../..."
  std::optional<std::uint64_t> limit_bytes;  ///< nullopt: no limit
  std::uint64_t usage_bytes = 0;
  std::uint64_t oom_kills = 0;  ///< memory.events oom_kill (v2) / memory.oom_control (v1)
  /// memory.stat inactive_file (v1: total_inactive_file): page cache the kernel drops
  /// before it OOM-kills; nullopt when memory.stat could not be read.
  std::optional<std::uint64_t> inactive_file_bytes;
  /// The cgroup's own memory.pressure (v2 with PSI); nullopt otherwise.
  std::optional<PressureSample> pressure;

  /// usage - inactive_file, the kubelet's "working set": what the OOM killer cannot reclaim.
  [[nodiscard]] std::uint64_t working_set_bytes() const {
    const std::uint64_t inactive = inactive_file_bytes.value_or(0);
    return usage_bytes > inactive ? usage_bytes - inactive : 0;
  }
};

/// Open file descriptors of the examined process against RLIMIT_NOFILE.
struct FdSample {
  std::uint64_t open = 0;
  std::uint64_t limit = 0;  ///< soft limit; Limit::kUnlimited when unlimited
  /// The system's file handles (file-nr allocated) against fs.file-max, not
  /// one process's fds against its RLIMIT_NOFILE (SampleOptions::process_fds).
  bool system = false;
};

/// A process the OOM killer took since the previous sample (from the kernel log).
struct OomVictim {
  std::int64_t pid = 0;
  std::string comm;    ///< e.g. "python3"
  std::string cgroup;  ///< the killed task's memory cgroup ("" when the log does not say)
  std::uint64_t rss_bytes = 0;
};

/// How one probe went in this sample: exported as headroom_probe_success and
/// headroom_probe_duration_seconds.
struct ProbeStatus {
  std::string
      probe;  ///< "filesystem", "meminfo", "pressure", "cgroup", "fds", "shm_stale", "vmstat"
  bool success = false;
  double duration_seconds = 0;
  std::optional<Error> error;  ///< why it failed (callers filter by its code), none on success
};

/// Everything measured at one instant. Optional fields are nullopt when their
/// probe failed or the kernel does not have the source.
struct Sample {
  std::chrono::system_clock::time_point time;
  std::chrono::steady_clock::time_point monotonic;  ///< for rates and prediction
  std::vector<FilesystemSample> filesystems;
  std::optional<MemorySample> memory;
  std::optional<PressureSample> pressure;
  std::optional<CgroupSample> cgroup;
  std::optional<std::uint64_t> system_oom_kills;  ///< /proc/vmstat oom_kill (Linux 4.13+)
  /// The newest kills when a counter grew since the last sample (with a SampleMemo), newest
  /// last; empty when none or the kernel log cannot be read (dmesg_restrict, no root).
  std::vector<OomVictim> oom_victims;
  std::optional<FdSample> fds;
  std::optional<std::uint64_t> shm_stale_bytes;  ///< /dev/shm files proven held by no process
  /// /dev/shm files with no holder seen, where not every process that might hold them
  /// could be inspected (run unprivileged): neither stale nor in use.
  std::optional<std::uint64_t> shm_unknown_bytes;
  std::vector<ProbeStatus> probes;

  /// The probe status of `probe`, or nullptr when it did not run.
  [[nodiscard]] const ProbeStatus* probe(std::string_view name) const;
  /// Memory left to the job and of how much: MemAvailable of host memory, or
  /// the cgroup's room of its limit when that is smaller. nullopt without meminfo.
  [[nodiscard]] std::optional<std::pair<double, double>> memory_left() const;
};

/// What to sample.
struct SampleOptions {
  /// Watched dirs (checkpoints, logs, caches), host paths. Missing dirs are
  /// reported in their FilesystemSample, not an error.
  std::vector<std::filesystem::path> dirs;
  /// Dirs that must be mount points (a data disk): watched as dirs, and an alert when one
  /// is not (unmounted: the job would write to the disk below).
  std::vector<std::filesystem::path> mounts;
  bool temp_dir = true;  ///< $TMPDIR, else /tmp
  /// A filesystem's statfs runs off the sampling thread unless its lookup stays on local
  /// filesystems (tmpfs, ext4, xfs, ...) with no symlink; one that has not answered in
  /// this long is reported stuck (and not asked again until it answers), and the sample
  /// goes on without it: one hung NFS or FUSE mount must not freeze every metric.
  std::chrono::milliseconds probe_timeout{2000};
  bool shm = true;  ///< /dev/shm
  /// Scanning /proc/*/fd and maps for stale shm costs the most; off by default
  /// in tight loops. A file counts as stale only when older than this.
  bool shm_stale = true;
  std::chrono::seconds shm_stale_min_age{60};
  /// With a SampleMemo, the /proc scan reruns only when a candidate file is
  /// new or has grown, or when the last scan is older than this.
  std::chrono::seconds shm_stale_rescan{60};
  /// With a SampleMemo, the memory cgroup is located again (/proc/<pid>/cgroup, which
  /// the kernel builds for every hierarchy on each read) this often, or at once when the
  /// mounts change or its files are gone: a process moved to another cgroup is followed
  /// within this long.
  std::chrono::seconds cgroup_relocate{10};
  /// The context's process's open fds against its RLIMIT_NOFILE (a job under
  /// `run`, the training process of the Python module); false: the system's
  /// file handles against fs.file-max, for a daemon whose own fds say nothing.
  bool process_fds = true;
};

/// A filesystem's statfs probe, on a thread of its own (sample/filesystems.cc).
struct PendingStatfs;

/// The handle a memo keeps on a filesystem's probe thread: the thread serves every sample
/// (one thread start per filesystem, not per sample) and ends when the handle is dropped,
/// or, when stuck in a statfs that hangs, as soon as that returns.
class StatfsProber {
 public:
  explicit StatfsProber(std::shared_ptr<PendingStatfs> state);
  StatfsProber(StatfsProber&& other) noexcept;
  StatfsProber& operator=(StatfsProber&& other) noexcept;
  StatfsProber(const StatfsProber&) = delete;
  StatfsProber& operator=(const StatfsProber&) = delete;
  ~StatfsProber();

  [[nodiscard]] PendingStatfs& state() const { return *state_; }
  [[nodiscard]] std::shared_ptr<PendingStatfs> shared() const { return state_; }

 private:
  std::shared_ptr<PendingStatfs> state_;
};

/// A path `watch` measures.
struct WatchedPath {
  std::filesystem::path path;  ///< host path, normalized
  FsRole role = FsRole::kDir;
  bool expect_mount = false;  ///< listed in SampleOptions::mounts
};

/// What one sample leaves for the next so that a long watch stays cheap: the
/// mount table (re-read only after a mount or unmount), and the verdicts of
/// the last stale-/dev/shm scan (a walk of every process's fds and maps, ~10 ms
/// on a quiet host and far more on a busy one). A file unheld and a minute old
/// seldom gets a holder again; a rescan every shm_stale_rescan bounds how long
/// such a change goes unseen.
struct SampleMemo {
  MountTable mounts;
  /// watched_paths() and the options it was made from: made again only when they differ
  /// (a reloaded config), not at every sample.
  struct Watched {
    std::vector<std::filesystem::path> mounts;
    std::vector<std::filesystem::path> dirs;
    bool temp_dir = false;
    bool shm = false;
    std::vector<WatchedPath> paths;
  };
  std::optional<Watched> watched;
  /// The statfs probe of each watched filesystem not measured on the sampling thread, by
  /// mount point. One that did not answer in time is still in its statfs and is not asked
  /// again until it answers.
  std::map<std::string, StatfsProber> probers;
  OpenFiles files;  ///< meminfo, PSI, vmstat, cgroup files: kept open, read from offset 0
  struct ShmFile {
    FileId id;
    std::uint64_t bytes = 0;
    bool stale = false;    ///< proven held by nobody
    bool unknown = false;  ///< no holder seen, but not every possible holder could be
    std::filesystem::path path;
  };
  std::vector<ShmFile> shm_files;  ///< the candidates of the last scan, sorted by id
  /// The OOM-kill counters of the last sample: a growth sends us to the kernel log.
  std::optional<std::uint64_t> system_oom_kills;
  /// vmstat's OOM-kill counter is read again only after the kernel logged something.
  KernelLogWatch kernel_log;
  std::optional<std::uint64_t> cgroup_oom_kills;
  std::optional<std::chrono::steady_clock::time_point> shm_scanned;
  /// Where the memory cgroup is, located (from /proc/<pid>/cgroup and the mounts) at
  /// `cgroup_located` with the mount table of `cgroup_mounts`: located again after
  /// SampleOptions::cgroup_relocate, when the mounts change, or when its files are gone.
  std::optional<CgroupLocation> cgroup;
  std::chrono::steady_clock::time_point cgroup_located;
  std::uint64_t cgroup_mounts = 0;
};

/// Takes one sample. Fails only for invalid options; every probe failure is
/// recorded in Sample::probes and leaves its fields empty.
/// A memo (kept by the caller between samples) lets probes reuse earlier work.
[[nodiscard]] Result<Sample> take_sample(const Context& context, const SampleOptions& options,
                                         SampleMemo* memo = nullptr);

/// The paths watched, in order, with their roles: mounts and dirs, then the temp dir,
/// then /dev/shm, duplicates (same path, "X/" is X) dropped.
[[nodiscard]] std::vector<WatchedPath> watched_paths(const Context& context,
                                                     const SampleOptions& options);

}  // namespace headroom
