// The "shm_stale" probe: bytes of /dev/shm files older than a minimum age that
// no process holds open or mapped, and bytes with no holder seen that could not be
// proven unused (an unprivileged watch cannot see another user's holders). The listing
// and the rule are clean's and check's (clean/shm_survey.h, inuse/use_proof.h); watch
// adds a memo of the verdicts between samples. Stale files are what a crashed
// DataLoader or NCCL leaves behind (torch_shm_*, nccl-*), and they fill the tmpfs
// just as live segments do.

#include <algorithm>

#include "core/clean/shm_survey.h"
#include "core/inuse/use_proof.h"
#include "core/sample/sample_probes.h"

namespace headroom {

namespace {

using ShmFile = SampleMemo::ShmFile;

/// Regular files below /dev/shm old enough to be stale (clean's listing) that hold space,
/// sorted by id. Most of the time there are none, and the /proc scan (the costly part) is
/// skipped. A file that holds no space (an empty segment, left by a crash before it was
/// sized) adds nothing to either total, stale or not: judging it would cost a scan for
/// nothing (until it grows: then it is new to the memo and scanned at once).
Result<std::vector<ShmEntry>> candidates(const Context& context, const SampleOptions& options,
                                         std::chrono::system_clock::time_point now,
                                         FileId& dir_id) {
  ShmListing listing;
  listing.recursive = true;
  listing.regular_only = true;
  listing.min_age = options.shm_stale_min_age;
  listing.now = now;
  auto entries = list_shm(context, listing, &dir_id);
  if (!entries) return fail(entries.error());
  std::erase_if(*entries, [](const ShmEntry& entry) { return entry.allocated_bytes == 0; });
  std::sort(entries->begin(), entries->end(),
            [](const ShmEntry& a, const ShmEntry& b) { return a.id < b.id; });
  return entries;
}

/// The earlier verdict for each file when every file was seen, at the same
/// size, by a scan recent enough (copied into `files`); false when /proc must
/// be scanned again.
bool reuse_verdicts(const SampleMemo& memo, const SampleOptions& options,
                    std::chrono::steady_clock::time_point now, std::vector<ShmFile>& files) {
  if (!memo.shm_scanned || now - *memo.shm_scanned >= options.shm_stale_rescan) return false;
  auto known = memo.shm_files.begin();
  for (ShmFile& file : files) {
    known = std::lower_bound(known, memo.shm_files.end(), file.id,
                             [](const ShmFile& a, const FileId& id) { return a.id < id; });
    if (known == memo.shm_files.end() || known->id != file.id || known->bytes != file.bytes) {
      return false;
    }
    file.stale = known->stale;
    file.unknown = known->unknown;
  }
  return true;
}

}  // namespace

void sample_shm_stale(const Context& context, const SampleOptions& options, SampleMemo* memo,
                      Sample& sample) {
  run_probe(context, sample, "shm_stale", [&]() -> Result<void> {
    FileId dir_id;
    auto entries = candidates(context, options, sample.time, dir_id);
    if (!entries) return fail(entries.error());
    std::vector<ShmFile> files;
    files.reserve(entries->size());
    for (const ShmEntry& entry : *entries) {
      files.push_back({entry.id, entry.allocated_bytes, false, false, entry.name});
    }
    const bool reused = memo != nullptr && reuse_verdicts(*memo, options, sample.monotonic, files);
    if (!reused && !files.empty()) {
      ScanOptions scan;
      scan.devices = {dir_id.device};
      scan.include_cwd_root_exe = false;
      scan.include_sysv = false;
      const auto index = scan_in_use(context, scan);
      if (!index) return fail(index.error());
      const Visibility visibility = visibility_of(context, *index);
      judge_shm_use(context, *index, visibility, LeaseWhen::kOnlyWhenUnseen, *entries);
      for (std::size_t i = 0; i < files.size(); ++i) {
        files[i].stale = (*entries)[i].use == Use::kUnused;
        files[i].unknown = (*entries)[i].use == Use::kUnknown;
      }
    }
    if (memo != nullptr && !reused) {
      memo->shm_scanned = sample.monotonic;
    }
    std::uint64_t stale = 0;
    std::uint64_t unknown = 0;
    for (const ShmFile& file : files) {
      stale += file.stale ? file.bytes : 0;
      unknown += file.unknown ? file.bytes : 0;
    }
    sample.shm_stale_bytes = stale;
    sample.shm_unknown_bytes = unknown;
    if (memo != nullptr) memo->shm_files = std::move(files);
    return {};
  });
}

}  // namespace headroom
