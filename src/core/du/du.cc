#include "core/du/du.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <thread>

#include "core/inuse/inuse_index.h"
#include "core/inuse/user_names.h"
#include "core/threads.h"

namespace headroom {

namespace {

/// The files some process holds, as the walker's watch set. Restricted to the
/// walked device unless the walk crosses mounts, to keep the set small.
Result<InUseIndex> scan_holders(const Context& context, const DuOptions& options,
                                const walk::FileStat& root) {
  ScanOptions scan;
  scan.include_sysv = false;
  if (options.mounts == walk::Mounts::kStayOnFilesystem) {
    scan.devices.push_back(static_cast<std::uint64_t>(root.id.dev));
  } else {
    scan.path_prefixes.push_back(options.path);
  }
  return scan_in_use(context, scan);
}

std::string describe_incomplete(const InUseIndex& index) {
  if (index.complete()) return "";
  if (index.hidepid()) return "/proc is mounted with hidepid: other users' processes are invisible";
  return fmt::format("{} process(es) could not be read; they may hold files too",
                     index.unreadable_pids().size());
}

void add_holders(const walk::TopEntry& top, const InUseIndex& index, DuEntry& entry) {
  entry.held_files = top.watched_count;
  std::set<int> seen;
  for (const walk::FileId& id : top.watched) {
    const FileId key{static_cast<std::uint64_t>(id.dev), static_cast<std::uint64_t>(id.ino)};
    for (const Holder* holder : index.holders(key)) {
      if (entry.holders.size() >= DuEntry::kMaxHolders) return;
      if (!seen.insert(holder->pid).second) continue;
      DuHolder out{holder->pid, "", "", std::string(to_string(holder->how))};
      if (const ProcessInfo* process = index.process(holder->pid)) {
        out.user = process->user;
        out.command = process->command;
      }
      entry.holders.push_back(std::move(out));
    }
  }
}

}  // namespace

Result<DuReport> run_du(const Context& context, const DuOptions& options) {
  const auto started = context.syscalls->monotonic();
  walk::FileStat root;
  if (const int error = walk::stat_at(AT_FDCWD, options.path.c_str(), root); error != 0) {
    return fail(Error::from_errno(error, options.path.string()));
  }
  DuReport report;
  report.path = options.path;
  report.size = options.size;
  report.mounts = options.mounts;

  // The /proc scan runs on its own thread while the walk starts: the walk
  // keeps the ids it meets until the scan publishes its watch set.
  std::optional<InUseIndex> index;
  walk::FileIdSet watch;
  walk::PendingWatch pending;
  const auto scan = [&] {
    auto scanned = scan_holders(context, options, root);
    if (scanned) {
      index = std::move(*scanned);
      for (const Holder& holder : index->all()) {
        watch.insert(
            {static_cast<dev_t>(holder.file.device), static_cast<ino_t>(holder.file.inode)});
      }
      report.in_use_checked = true;
      report.in_use_note = describe_incomplete(*index);
    } else {
      report.in_use_note = scanned.error().message;
    }
    pending.publish(index ? &watch : nullptr);
  };
  std::optional<std::thread> scanner;
  if (options.in_use) {
    scanner = try_start_thread(scan);
    if (!scanner) scan();  // no thread to spare: scan first, then walk
  }

  walk::WalkOptions walk_options;
  walk_options.mounts = options.mounts;
  walk_options.size = options.size;
  walk_options.threads = options.threads;
  walk_options.keep_files = options.top;
  walk_options.pending_watch = options.in_use ? &pending : nullptr;
  walk_options.progress = options.progress;
  auto walked = walk::walk(options.path, walk_options);
  if (scanner) scanner->join();
  if (!walked) return fail(walked.error());

  std::vector<walk::TopEntry>& tops = walked->entries;
  const auto size = options.size;
  std::sort(tops.begin(), tops.end(), [size](const walk::TopEntry& a, const walk::TopEntry& b) {
    if (a.tally.bytes(size) != b.tally.bytes(size))
      return a.tally.bytes(size) > b.tally.bytes(size);
    return a.name < b.name;
  });
  UserNames users(context);
  for (std::size_t i = 0; i < tops.size(); ++i) {
    const walk::TopEntry& top = tops[i];
    if (options.top != 0 && i >= options.top) {
      report.other.add(top.tally);
      ++report.other_count;
      continue;
    }
    DuEntry entry;
    entry.name = top.name;
    entry.kind = top.stat.kind;
    entry.owner_uid = top.stat.owner;
    entry.owner = users.name(top.stat.owner);
    entry.tally = top.tally;
    entry.mount_point = top.mount_point;
    if (index) add_holders(top, *index, entry);
    report.entries.push_back(std::move(entry));
  }
  report.other.add(walked->folded);
  report.other_count += walked->folded_count;
  report.total = walked->total;
  report.unreadable = walked->unreadable;
  report.problems = std::move(walked->problems);
  report.mounts_skipped = walked->mounts_skipped;
  report.skipped_mounts = std::move(walked->skipped_mounts);
  report.hard_links_skipped = walked->hard_links_skipped;
  report.vanished = walked->vanished;
  report.threads = walked->threads;
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      context.syscalls->monotonic() - started);
  report.now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      context.syscalls->now().time_since_epoch())
                      .count();
  return report;
}

}  // namespace headroom
