#include "core/series/checkpoints.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/inuse/inuse_index.h"
#include "core/unique_fd.h"
#include "core/walk/dirents.h"

namespace headroom {

namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

/// Reads a small regular file relative to `dir_fd` without following a symlink.
std::optional<std::string> read_small_at(int dir_fd, const std::string& name, std::size_t limit) {
  const UniqueFd file(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file.ok()) return std::nullopt;
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > limit) return std::nullopt;
  }
  return text;
}

std::string trim(std::string text) {
  const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!text.empty() && blank(static_cast<unsigned char>(text.back()))) text.pop_back();
  const auto first = std::find_if_not(text.begin(), text.end(), blank);
  return std::string(first, text.end());
}

FileId key(const walk::FileId& id) {
  return FileId{static_cast<std::uint64_t>(id.dev), static_cast<std::uint64_t>(id.ino)};
}

/// Sizes a checkpoint (its subtree for a directory) and the watched files under it.
Result<walk::Tally> measure(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                            const walk::FileIdSet* watch, std::vector<walk::FileId>* watched) {
  if (!checkpoint.directory) {
    walk::Tally tally;
    walk::FileStat stat;
    const std::filesystem::path path = dir / checkpoint.name;
    if (const int error = walk::stat_at(AT_FDCWD, path.c_str(), stat); error != 0) {
      return fail(Error::from_errno(error, path.string()));
    }
    tally.add(stat);
    return tally;
  }
  walk::WalkOptions options;
  options.threads = 1;
  options.watch = watch;
  auto walked = walk::walk(dir / checkpoint.name, options);
  if (!walked) return fail(walked.error());
  if (watched != nullptr) {
    for (const walk::TopEntry& entry : walked->entries) {
      watched->insert(watched->end(), entry.watched.begin(), entry.watched.end());
    }
  }
  return walked->total;
}

std::vector<CheckpointHolder> collect_holders(const InUseIndex& index,
                                              const std::filesystem::path& dir,
                                              const Checkpoint& checkpoint,
                                              std::vector<walk::FileId> ids) {
  ids.push_back(checkpoint.stat.id);
  std::vector<const Holder*> found =
      index.holders_under(dir / checkpoint.name, key(checkpoint.stat.id));
  for (const walk::FileId& id : ids) {
    for (const Holder* holder : index.holders(key(id))) found.push_back(holder);
  }
  std::vector<CheckpointHolder> holders;
  std::set<int> seen;
  for (const Holder* holder : found) {
    if (!seen.insert(holder->pid).second) continue;
    CheckpointHolder out{holder->pid, "", "", std::string(to_string(holder->how))};
    if (const ProcessInfo* process = index.process(holder->pid)) {
      out.command = process->command;
      out.user = process->user;
    }
    holders.push_back(std::move(out));
  }
  return holders;
}

walk::FileIdSet held_ids(const InUseIndex& index) {
  walk::FileIdSet ids;
  for (const Holder& holder : index.all()) {
    ids.insert({static_cast<dev_t>(holder.file.device), static_cast<ino_t>(holder.file.inode)});
  }
  return ids;
}

Checkpoint* find(std::vector<Checkpoint>& checkpoints, std::string_view name) {
  for (Checkpoint& checkpoint : checkpoints) {
    if (checkpoint.name == name) return &checkpoint;
  }
  return nullptr;
}

/// Marks the checkpoints other files name: symlinks ('latest' -> checkpoint-500),
/// DeepSpeed's `latest` file, Hugging Face's best_model_checkpoint.
void mark_named(int dir_fd, const std::filesystem::path& dir,
                const std::vector<std::pair<std::string, walk::FileStat>>& others,
                std::vector<Checkpoint>& checkpoints) {
  auto name_it = [&](std::string_view name, const std::string& why, bool latest = false) {
    Checkpoint* checkpoint = find(checkpoints, name);
    if (checkpoint == nullptr) return;
    if (checkpoint->named_by.empty()) checkpoint->named_by = why;
    checkpoint->latest_marker = checkpoint->latest_marker || latest;
  };
  for (const auto& [name, stat] : others) {
    if (stat.kind == walk::FileKind::kSymlink) {
      char target[4096];
      const ssize_t length = ::readlinkat(dir_fd, name.c_str(), target, sizeof target - 1);
      if (length <= 0) continue;
      const std::filesystem::path resolved =
          (dir / std::string(target, static_cast<std::size_t>(length))).lexically_normal();
      const std::filesystem::path relative = resolved.lexically_relative(dir);
      const std::string why = "symlink '" + name + "' points to it";
      if (!relative.empty() && *relative.begin() != "..") name_it(relative.begin()->string(), why);
      // Also by identity, for targets reached through another path.
      walk::FileStat followed;
      if (walk::stat_at(AT_FDCWD, resolved.c_str(), followed) == 0) {
        for (Checkpoint& checkpoint : checkpoints) {
          if (checkpoint.stat.id == followed.id && checkpoint.named_by.empty())
            checkpoint.named_by = why;
        }
      }
    } else if (stat.kind == walk::FileKind::kFile && name.rfind("latest", 0) == 0 &&
               stat.apparent_bytes < 4096) {
      if (auto text = read_small_at(dir_fd, name, 4096)) {
        name_it(trim(*text), "named by DeepSpeed's '" + name + "' file", true);
      }
    }
  }
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    const std::string name = checkpoints[i].name;
    if (!checkpoints[i].directory) continue;
    const UniqueFd sub(::openat(dir_fd, name.c_str(), kDirectoryFlags));
    if (!sub.ok()) continue;
    const auto text = read_small_at(sub.get(), "trainer_state.json", std::size_t{64} << 20);
    if (!text) continue;
    const auto state = nlohmann::json::parse(*text, nullptr, false);
    if (state.is_discarded() || !state.is_object()) continue;
    const auto best = state.find("best_model_checkpoint");
    if (best == state.end() || !best->is_string()) continue;
    name_it(std::filesystem::path(best->get<std::string>()).filename().string(),
            "best_model_checkpoint in " + name + "/trainer_state.json");
  }
}

/// The first file of a checkpoint whose format says it was cut short.
std::string damage_of(int dir_fd, const Checkpoint& checkpoint) {
  // Each check reads at most the file's head and its last 64 KiB.
  constexpr std::size_t kMaxChecked = 64;
  if (!checkpoint.directory) return format_damage(dir_fd, checkpoint.name);
  std::size_t checked = 0;
  for (const ContentFile& file : checkpoint.contents) {
    if (++checked > kMaxChecked) break;
    std::string damage = format_damage(dir_fd, checkpoint.name + "/" + file.path);
    if (!damage.empty()) return file.path + ": " + damage;
  }
  return "";
}

/// The kernel's answer for `path` below `dir_fd`: a write lease is refused while anyone has
/// the file open or mapped, a read lease only while someone has it open for writing.
LeaseAnswer lease_on(const Context& context, int dir_fd, const std::string& path, bool write) {
  const UniqueFd file(
      ::openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file.ok() || context.syscalls == nullptr) return LeaseAnswer::kUnknown;
  return write ? context.syscalls->write_lease(file.get())
               : context.syscalls->read_lease(file.get());
}

/// Whether the writer of a save temp is still at work: its pid, the holders the
/// index found, and the kernel's answer whether anyone has the file open.
WriterState writer_state(const Context& context, int dir_fd, const Checkpoint& temp,
                         const std::optional<InUseIndex>& index) {
  if (!temp.holders.empty()) return WriterState::kAlive;
  std::error_code error;
  if (std::filesystem::exists(context.root.proc(std::to_string(temp.temp.pid)), error)) {
    return WriterState::kAlive;  // (or its pid was reused: wait until that one exits)
  }
  const LeaseAnswer lease = lease_on(context, dir_fd, temp.name, true);
  if (lease == LeaseAnswer::kInUse) return WriterState::kAlive;
  if (lease == LeaseAnswer::kUnused || (index && index->complete())) return WriterState::kGone;
  return WriterState::kUnknown;
}

/// Whether a save is writing the checkpoint now: someone has it, or for a directory (a
/// Hugging Face checkpoint-N/) one of its files, open for writing. A pid that lives (perhaps
/// reused) or a reader is no writer. When the kernel cannot answer for a file (not ours, no
/// leases here), a live writer of a temp or a holder the index found decides.
bool being_written(const Context& context, int dir_fd, const Checkpoint& checkpoint) {
  if (checkpoint.directory) {
    return std::any_of(
        checkpoint.contents.begin(), checkpoint.contents.end(), [&](const ContentFile& file) {
          return lease_on(context, dir_fd, checkpoint.name + "/" + file.path, false) ==
                 LeaseAnswer::kInUse;
        });
  }
  const LeaseAnswer lease = lease_on(context, dir_fd, checkpoint.name, false);
  if (lease == LeaseAnswer::kUnknown) {
    return checkpoint.writer == WriterState::kAlive || !checkpoint.holders.empty();
  }
  return lease == LeaseAnswer::kInUse;
}

/// Whether `name` is one of the entries the scan was asked for.
bool wanted(const CheckpointScanOptions& options, std::string_view name, bool directory,
            walk::FileKind kind) {
  if (kind != walk::FileKind::kFile && kind != walk::FileKind::kDirectory) return false;
  if (!options.glob.empty()) {
    return ::fnmatch(options.glob.c_str(), std::string(name).c_str(), 0) == 0;
  }
  if (!options.series.empty()) return series_template(name, directory) == options.series;
  return directory ? is_checkpoint_dir_name(name)
                   : kind == walk::FileKind::kFile && is_checkpoint_file_name(name);
}

}  // namespace

Result<InUseIndex> scan_device(const Context& context, const walk::FileStat& dir_stat,
                               std::string* note) {
  ScanOptions scan;
  scan.include_sysv = false;
  scan.devices.push_back(static_cast<std::uint64_t>(dir_stat.id.dev));
  auto index = scan_in_use(context, scan);
  if (index && note != nullptr && !index->complete()) {
    *note = index->hidepid() ? "/proc is mounted with hidepid: other users' processes are invisible"
                             : std::to_string(index->unreadable_pids().size()) +
                                   " process(es) could not be read; they may hold checkpoints too";
  }
  return index;
}

Result<CheckpointScan> scan_checkpoints(const Context& context,
                                        const CheckpointScanOptions& options) {
  CheckpointScan scan;
  scan.dir = options.dir;
  const UniqueFd dir(::open(options.dir.c_str(), kDirectoryFlags));
  if (!dir.ok()) return fail(Error::from_errno(errno, options.dir.string()));
  if (const int error = walk::stat_at(dir.get(), "", scan.dir_stat); error != 0) {
    return fail(Error::from_errno(error, options.dir.string()));
  }
  std::vector<std::pair<std::string, walk::FileStat>> others;
  char buffer[walk::kDirentBufferSize];
  const int error = walk::for_each_dirent(
      dir.get(), buffer, sizeof buffer, [&](std::string_view name, unsigned char) {
        Checkpoint checkpoint;
        checkpoint.name = name;
        if (walk::stat_at(dir.get(), checkpoint.name.c_str(), checkpoint.stat) != 0) return;
        const walk::FileStat& stat = checkpoint.stat;
        const bool directory = stat.kind == walk::FileKind::kDirectory;
        if (auto temp = parse_save_temp(name); temp && stat.kind == walk::FileKind::kFile) {
          checkpoint.kind = EntryKind::kSaveTemp;
          checkpoint.temp = std::move(*temp);
          checkpoint.parsed.temporary = true;
          scan.checkpoints.push_back(std::move(checkpoint));
          return;
        }
        if (!wanted(options, name, directory, stat.kind)) {
          others.emplace_back(checkpoint.name, stat);
          return;
        }
        if (directory && (stat.id.dev != scan.dir_stat.id.dev || stat.mount_root)) {
          ++scan.mounts_skipped;  // another filesystem: never pruned
          return;
        }
        checkpoint.directory = directory;
        checkpoint.parsed = parse_checkpoint_name(name);
        scan.checkpoints.push_back(std::move(checkpoint));
      });
  if (error != 0) return fail(Error::from_errno(error, options.dir.string()));

  std::optional<InUseIndex> index;
  walk::FileIdSet watch;
  if (options.in_use) {
    auto scanned = scan_device(context, scan.dir_stat, &scan.in_use_note);
    if (scanned) {
      index = std::move(*scanned);
      watch = held_ids(*index);
    } else {
      scan.in_use_note = scanned.error().message;
    }
  }
  for (Checkpoint& checkpoint : scan.checkpoints) {
    std::vector<walk::FileId> watched;
    auto tally = measure(options.dir, checkpoint, index ? &watch : nullptr, &watched);
    if (!tally) {
      // Renamed, replaced or removed since it was listed: it is changing, so it is kept
      // (as one still being written), never a reason to give up on the others.
      checkpoint.growing = true;
      continue;
    }
    checkpoint.tally = *tally;
    if (index)
      checkpoint.holders = collect_holders(*index, options.dir, checkpoint, std::move(watched));
    if (checkpoint.kind == EntryKind::kSaveTemp) {
      checkpoint.writer = writer_state(context, dir.get(), checkpoint, index);
      if (checkpoint.writer == WriterState::kAlive)
        checkpoint.being_written = being_written(context, dir.get(), checkpoint);
    } else if (options.contents) {
      if (checkpoint.directory) checkpoint.contents = list_contents(dir.get(), checkpoint.name);
      checkpoint.damage = damage_of(dir.get(), checkpoint);
      // A checkpoint cut short may be a save still being written to its own name: a file
      // torch.save writes, or a directory (checkpoint-N/) a file of which is being written.
      if (!checkpoint.damage.empty()) {
        checkpoint.being_written = being_written(context, dir.get(), checkpoint);
      }
    }
  }
  // A checkpoint being written grows between two looks; torch.save and
  // safetensors write sequentially, so 200 ms catches any live writer.
  if (options.settle.count() > 0) {
    std::this_thread::sleep_for(options.settle);
    for (Checkpoint& checkpoint : scan.checkpoints) {
      auto again = measure(options.dir, checkpoint, nullptr, nullptr);
      checkpoint.growing = !again || again->apparent_bytes != checkpoint.tally.apparent_bytes ||
                           again->disk_bytes != checkpoint.tally.disk_bytes ||
                           again->newest_mtime_ns != checkpoint.tally.newest_mtime_ns;
    }
  }
  mark_named(dir.get(), options.dir, others, scan.checkpoints);
  return scan;
}

Result<CheckpointNow> remeasure(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                                const InUseIndex* index) {
  CheckpointNow now;
  walk::FileIdSet watch;
  std::vector<walk::FileId> watched;
  if (index != nullptr) watch = held_ids(*index);
  auto tally = measure(dir, checkpoint, index != nullptr ? &watch : nullptr, &watched);
  if (!tally) return fail(tally.error());
  now.tally = *tally;
  if (index != nullptr) now.holders = collect_holders(*index, dir, checkpoint, std::move(watched));
  return now;
}

}  // namespace headroom
