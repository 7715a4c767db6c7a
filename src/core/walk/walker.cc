#include "core/walk/walker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "core/threads.h"
#include "core/walk/dirents.h"
#include "core/walk/hard_link_set.h"
#include "core/walk/task_queue.h"

namespace headroom::walk {

void Tally::add(const FileStat& stat) {
  disk_bytes += stat.disk_bytes;
  apparent_bytes += stat.apparent_bytes;
  if (stat.kind == FileKind::kDirectory) {
    ++directories;
  } else {
    ++files;
  }
  newest_mtime_ns = std::max(newest_mtime_ns, stat.mtime_ns);
}

void Tally::add(const Tally& other) {
  disk_bytes += other.disk_bytes;
  apparent_bytes += other.apparent_bytes;
  files += other.files;
  directories += other.directories;
  newest_mtime_ns = std::max(newest_mtime_ns, other.newest_mtime_ns);
}

namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string join(const std::string& parent, std::string_view name) {
  std::string path;
  path.reserve(parent.size() + 1 + name.size());
  path += parent;
  if (path.empty() || path.back() != '/') path += '/';
  path += name;
  return path;
}

/// Totals of one top-level directory, summed by every worker as it goes.
struct SharedTally {
  std::atomic<std::uint64_t> disk_bytes{0};
  std::atomic<std::uint64_t> apparent_bytes{0};
  std::atomic<std::uint64_t> files{0};
  std::atomic<std::uint64_t> directories{0};
  std::atomic<std::int64_t> newest_mtime_ns{0};

  void add(const Tally& tally) {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    disk_bytes.fetch_add(tally.disk_bytes, kRelaxed);
    apparent_bytes.fetch_add(tally.apparent_bytes, kRelaxed);
    files.fetch_add(tally.files, kRelaxed);
    directories.fetch_add(tally.directories, kRelaxed);
    std::int64_t seen = newest_mtime_ns.load(kRelaxed);
    while (seen < tally.newest_mtime_ns &&
           !newest_mtime_ns.compare_exchange_weak(seen, tally.newest_mtime_ns, kRelaxed)) {
    }
  }
  [[nodiscard]] Tally load() const {
    return Tally{disk_bytes.load(), apparent_bytes.load(), files.load(), directories.load(),
                 newest_mtime_ns.load()};
  }
};

/// An id counted before a pending watch set was published, and its entry.
struct LateId {
  FileId id;
  std::uint32_t slot;
};
/// Ids a worker keeps before it waits for a pending watch set: ~400 KiB each.
constexpr std::size_t kMaxLate = 16 * 1024;

/// State shared by the workers of one walk.
class Walk {
 public:
  Walk(const WalkOptions& options, WalkResult& result, int root_fd, std::vector<TopEntry>& dirs)
      : options_(options),
        result_(result),
        root_fd_(root_fd),
        dirs_(dirs),
        queue_(result.threads) {}

  /// Adds `stat` to `tally` unless it is another name of a counted file.
  bool count(const FileStat& stat, Tally& tally) {
    if (stat.kind != FileKind::kDirectory && stat.links > 1 && !links_.insert(stat.id)) {
      hard_links_skipped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    tally.add(stat);
    return true;
  }
  /// Notes `id`, counted under top-level entry `slot`, on that entry when it is
  /// watched; while a pending watch set is not published yet, keeps it in `late`.
  void observe(const FileId& id, std::uint32_t slot, std::vector<LateId>& late) {
    const FileIdSet* set = options_.watch;
    if (set == nullptr && options_.pending_watch != nullptr) {
      PendingWatch& pending = *options_.pending_watch;
      if (!pending.published()) {
        late.push_back({id, slot});
        if (late.size() >= kMaxLate) check_late(late);  // waits for the set
        return;
      }
      set = pending.set();
      if (!late.empty()) check_late(late);
    }
    if (set != nullptr && set->contains(id)) note_watched(dirs_[slot], id);
  }
  /// Checks the ids a worker kept before the pending set was published.
  void check_late(std::vector<LateId>& late) {
    if (late.empty()) return;
    if (const FileIdSet* set = options_.pending_watch->wait(); set != nullptr) {
      for (const LateId& seen : late) {
        if (set->contains(seen.id)) note_watched(dirs_[seen.slot], seen.id);
      }
    }
    late.clear();
  }
  /// Notes the top-level entries that are watched themselves (after the walk,
  /// so a pending set has had the whole walk to arrive). They go first in
  /// `watched`: the entry's own holders are named even when many files under
  /// it are held too.
  void observe_top_level(std::vector<TopEntry>& entries) {
    const FileIdSet* set = options_.watch;
    if (set == nullptr && options_.pending_watch != nullptr) set = options_.pending_watch->wait();
    if (set == nullptr) return;
    for (TopEntry& entry : entries) {
      if (entry.mount_point || !set->contains(entry.stat.id)) continue;
      entry.watched.insert(entry.watched.begin(), entry.stat.id);
      if (entry.watched.size() > WalkResult::kMaxWatched) entry.watched.pop_back();
      ++entry.watched_count;
    }
  }
  void note_watched(TopEntry& entry, const FileId& id) {
    const std::lock_guard lock(mutex_);
    if (entry.watched.size() < WalkResult::kMaxWatched) entry.watched.push_back(id);
    ++entry.watched_count;
  }
  /// True when a directory must not be entered because it is another filesystem.
  bool foreign(const FileStat& stat, const std::string& path) {
    if (options_.mounts == Mounts::kCross) return false;
    if (stat.id.dev == result_.root_stat.id.dev && !stat.mount_root) return false;
    const std::lock_guard lock(mutex_);
    ++result_.mounts_skipped;
    if (result_.skipped_mounts.size() < WalkResult::kMaxProblems) {
      result_.skipped_mounts.push_back(path);
    }
    return true;
  }
  void problem(const std::string& path, int errnum) {
    if (errnum == ENOENT) {
      vanished_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::lock_guard lock(mutex_);
    ++result_.unreadable;
    if (result_.problems.size() < WalkResult::kMaxProblems) {
      result_.problems.push_back({path, std::strerror(errnum)});
    }
  }
  void finish_directory(std::uint32_t slot, const Tally& tally, std::uint64_t entries) {
    tallies_[slot].add(tally);
    if (options_.progress != nullptr) {
      options_.progress->entries.fetch_add(entries, std::memory_order_relaxed);
      options_.progress->disk_bytes.fetch_add(tally.disk_bytes, std::memory_order_relaxed);
      options_.progress->directories.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void run(unsigned threads);
  void collect();

  const WalkOptions& options_;
  WalkResult& result_;
  int root_fd_;
  std::vector<TopEntry>& dirs_;
  std::unique_ptr<SharedTally[]> tallies_;
  TaskQueue queue_;
  HardLinkSet links_;
  std::mutex mutex_;
  std::atomic<std::uint64_t> hard_links_skipped_{0};
  std::atomic<std::uint64_t> vanished_{0};
};

/// One directory on a worker's stack: its fd, path, and the names of the
/// subdirectories still to visit (NUL-separated, reused across directories).
struct Frame {
  int fd = -1;
  std::string path;
  std::string subdirectories;
  std::size_t cursor = 0;
};

/// One walking thread: a listing buffer and a stack of frames, both reused,
/// so the steady state allocates nothing per entry.
class Worker {
 public:
  explicit Worker(Walk& walk) : walk_(walk), buffer_(std::make_unique<char[]>(kDirentBufferSize)) {}

  void run() {
    while (std::optional<Task> task = walk_.queue_.pop()) {
      run_task(*task);
      walk_.queue_.finish();
    }
    walk_.check_late(late_);
  }

 private:
  void run_task(Task& task) {
    const std::uint32_t slot = task.slot;
    int fd = task.fd;
    if (fd < 0) {
      fd = open_directory(walk_.root_fd_, walk_.dirs_[slot].name.c_str(), task.path);
      if (fd < 0) return;
    }
    if (frames_.empty()) frames_.emplace_back();
    frames_[0].fd = fd;
    frames_[0].path = std::move(task.path);
    list(frames_[0], slot);
    std::size_t depth = 0;
    for (;;) {
      Frame& frame = frames_[depth];
      if (frame.cursor >= frame.subdirectories.size()) {
        ::close(frame.fd);
        frame.fd = -1;
        if (depth == 0) return;
        --depth;
        continue;
      }
      const std::size_t offset = frame.cursor;
      const char* name = frame.subdirectories.data() + offset;
      frame.cursor += std::strlen(name) + 1;
      std::string path = join(frame.path, name);
      const int child = open_directory(frame.fd, name, path);
      if (child < 0) continue;
      if (walk_.queue_.hungry()) {
        walk_.queue_.push(Task{child, slot, std::move(path)});
        continue;
      }
      if (frames_.size() == depth + 1) frames_.emplace_back();  // may move `frame`
      Frame& next = frames_[depth + 1];
      next.fd = child;
      next.path = std::move(path);
      list(next, slot);
      ++depth;
    }
  }

  /// openat(O_NOFOLLOW|O_DIRECTORY), then checks the directory is still on
  /// the walked filesystem: a directory swapped for a mount point after the
  /// listing's statx is not entered.
  int open_directory(int parent, const char* name, const std::string& path) {
    const int fd = ::openat(parent, name, kDirectoryFlags);
    if (fd < 0) {
      walk_.problem(path, errno);
      return -1;
    }
    FileStat stat;
    if (walk_.options_.mounts == Mounts::kStayOnFilesystem &&
        (stat_entry_at(fd, "", stat) != 0 || walk_.foreign(stat, path))) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  void list(Frame& frame, std::uint32_t slot) {
    frame.subdirectories.clear();
    frame.cursor = 0;
    Tally tally;
    std::uint64_t entries = 0;
    FileStat stat;
    const int error = for_each_dirent_by_inode(
        frame.fd, buffer_.get(), kDirentBufferSize, order_,
        [&](std::string_view name, unsigned char) {
          ++entries;
          const int stat_error = stat_entry_at(frame.fd, name.data(), stat);
          if (stat_error != 0) {
            walk_.problem(join(frame.path, name), stat_error);
            return;
          }
          if (stat.kind == FileKind::kDirectory) {
            if (walk_.foreign(stat, join(frame.path, name))) return;
            frame.subdirectories.append(name);
            frame.subdirectories.push_back('\0');
          }
          if (walk_.count(stat, tally)) walk_.observe(stat.id, slot, late_);
        });
    if (error != 0) walk_.problem(frame.path, error);
    walk_.finish_directory(slot, tally, entries);
  }

  Walk& walk_;
  std::unique_ptr<char[]> buffer_;
  std::vector<DirentRef> order_;
  std::vector<LateId> late_;
  std::vector<Frame> frames_;
};

void Walk::run(unsigned threads) {
  tallies_ = std::make_unique<SharedTally[]>(dirs_.size());
  for (std::uint32_t slot = 0; slot < dirs_.size(); ++slot) {
    if (dirs_[slot].mount_point) continue;
    queue_.push(Task{-1, slot, join(result_.root.string(), dirs_[slot].name)});
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    auto thread = try_start_thread([this] { Worker(*this).run(); });
    if (!thread) break;  // a task limit: fewer workers take the same queue
    pool.push_back(std::move(*thread));
  }
  if (pool.empty()) Worker(*this).run();  // not even one: this thread walks
  for (std::thread& thread : pool) thread.join();
}

void Walk::collect() {
  for (std::size_t slot = 0; slot < dirs_.size(); ++slot) {
    dirs_[slot].tally.add(tallies_[slot].load());
    result_.total.add(dirs_[slot].tally);
  }
  result_.hard_links_skipped += hard_links_skipped_.load();
  result_.vanished += vanished_.load();
}

/// Keeps the `keep` largest top-level files; folds the rest into the result.
class FileKeeper {
  /// Orders a min-heap: the smallest kept file sits at the front.
  struct Larger {
    SizeKind kind;
    bool operator()(const TopEntry& a, const TopEntry& b) const {
      return a.tally.bytes(kind) > b.tally.bytes(kind);
    }
  };

 public:
  FileKeeper(const WalkOptions& options, WalkResult& result) : options_(options), result_(result) {}
  void add(TopEntry entry) {
    files_.push_back(std::move(entry));
    if (options_.keep_files == 0) return;
    std::push_heap(files_.begin(), files_.end(), Larger{options_.size});
    if (files_.size() <= options_.keep_files) return;
    std::pop_heap(files_.begin(), files_.end(), Larger{options_.size});
    result_.folded.add(files_.back().tally);
    ++result_.folded_count;
    files_.pop_back();
  }
  std::vector<TopEntry>& files() { return files_; }

 private:
  const WalkOptions& options_;
  WalkResult& result_;
  std::vector<TopEntry> files_;
};

}  // namespace

unsigned default_threads() {
  // With a cold cache every statx may wait for a disk read, so more threads
  // than CPUs keep the device queue full: on the 2-CPU benchmark host 8
  // threads walk 1M files in 17 s cold against 30 s with 2, and are no slower warm
  // (bench/RESULTS-du.md).
  const unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
  return std::clamp(4 * cpus, 4U, 64U);
}

Result<WalkResult> walk(const std::filesystem::path& root, const WalkOptions& options) {
  WalkResult result;
  result.root = root;
  result.threads = options.threads != 0 ? options.threads : default_threads();
  if (const int error = stat_at(AT_FDCWD, root.c_str(), result.root_stat); error != 0) {
    return fail(Error::from_errno(error, root.string()));
  }
  result.total.add(result.root_stat);
  if (result.root_stat.kind != FileKind::kDirectory) {
    TopEntry entry;
    entry.name = root.filename().string();
    entry.stat = result.root_stat;
    entry.tally = result.total;
    result.entries.push_back(std::move(entry));
    return result;
  }
  const int root_fd = ::open(root.c_str(), kDirectoryFlags);
  if (root_fd < 0) return fail(Error::from_errno(errno, root.string()));

  std::vector<TopEntry> dirs;
  Walk shared(options, result, root_fd, dirs);  // `dirs` is complete before run()
  FileKeeper files(options, result);
  auto buffer = std::make_unique<char[]>(kDirentBufferSize);
  const int error = for_each_dirent(
      root_fd, buffer.get(), kDirentBufferSize, [&](std::string_view name, unsigned char) {
        TopEntry entry;
        entry.name = name;
        if (const int stat_error = stat_at(root_fd, entry.name.c_str(), entry.stat);
            stat_error != 0) {
          shared.problem(join(root.string(), name), stat_error);
          return;
        }
        if (entry.stat.kind == FileKind::kDirectory) {
          entry.mount_point = shared.foreign(entry.stat, join(root.string(), name));
          if (!entry.mount_point) shared.count(entry.stat, entry.tally);
          dirs.push_back(std::move(entry));
          return;
        }
        if (!shared.count(entry.stat, entry.tally)) return;
        result.total.add(entry.tally);
        files.add(std::move(entry));
      });
  if (error != 0) {
    ::close(root_fd);
    return fail(Error::from_errno(error, root.string()));
  }
  shared.run(result.threads);
  shared.collect();
  ::close(root_fd);
  result.entries = std::move(dirs);
  for (TopEntry& file : files.files()) result.entries.push_back(std::move(file));
  shared.observe_top_level(result.entries);
  return result;
}

}  // namespace headroom::walk
