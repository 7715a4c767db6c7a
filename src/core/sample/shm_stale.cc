// The "shm_stale" probe: bytes of /dev/shm files older than a minimum age that
// no process holds open or mapped, and bytes with no holder seen that could not be
// proven unused (an unprivileged watch cannot see another user's holders). The rule
// is clean's and check's (inuse/use_proof.h). Stale files are what a crashed
// DataLoader or NCCL leaves behind (torch_shm_*, nccl-*), and they fill the tmpfs
// just as live segments do.

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "core/inuse/use_proof.h"
#include "core/sample/sample_probes.h"

namespace headroom {

namespace {

using ShmFile = SampleMemo::ShmFile;

/// Regular files old enough to be stale, sorted by id. Most of the time there
/// are none, and the /proc scan (the costly part) is skipped.
Result<std::vector<ShmFile>> candidates(const std::filesystem::path& shm,
                                        const SampleOptions& options, std::time_t now) {
  std::vector<ShmFile> files;
  std::error_code error;
  std::filesystem::recursive_directory_iterator entry(
      shm, std::filesystem::directory_options::skip_permission_denied, error);
  for (const std::filesystem::recursive_directory_iterator end; !error && entry != end;
       entry.increment(error)) {
    struct stat info {};
    if (::lstat(entry->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (now - info.st_mtime < options.shm_stale_min_age.count()) continue;
    // tmpfs files are often sparse: count the pages they hold, not st_size.
    files.push_back({file_id_of(info), static_cast<std::uint64_t>(info.st_blocks) * 512, false,
                     false, entry->path()});
  }
  if (error) return fail(Error::from_errno(error.value(), shm.string()));
  std::sort(files.begin(), files.end(),
            [](const ShmFile& a, const ShmFile& b) { return a.id < b.id; });
  return files;
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
    const std::filesystem::path shm = context.root.dev("shm");
    struct stat shm_info {};
    if (::stat(shm.c_str(), &shm_info) != 0) return fail(Error::from_errno(errno, shm.string()));
    auto files = candidates(shm, options, std::chrono::system_clock::to_time_t(sample.time));
    if (!files) return fail(files.error());
    const bool reused = memo != nullptr && reuse_verdicts(*memo, options, sample.monotonic, *files);
    if (!reused && !files->empty()) {
      ScanOptions scan;
      scan.devices = {static_cast<std::uint64_t>(shm_info.st_dev)};
      scan.include_cwd_root_exe = false;
      scan.include_sysv = false;
      const auto index = scan_in_use(context, scan);
      if (!index) return fail(index.error());
      const Visibility visibility = visibility_of(context, *index);
      for (ShmFile& file : *files) {
        // A lease is asked for only when the scan could not see everyone: a daemon
        // that sees every process needs none, and takes none every rescan.
        UniqueFd fd;
        int open_errno = 0;
        if (!visibility.complete() && !index->is_held(file.id)) {
          fd = open_for_probe(AT_FDCWD, file.path.c_str(), file.id);
          if (!fd.ok()) open_errno = errno;
        }
        const Use use = regular_file_use(*index, visibility, file.id, fd.get(), open_errno).use;
        file.stale = use == Use::kUnused;
        file.unknown = use == Use::kUnknown;
      }
    }
    if (memo != nullptr && !reused) {
      memo->shm_scanned = sample.monotonic;
    }
    std::uint64_t stale = 0;
    std::uint64_t unknown = 0;
    for (const ShmFile& file : *files) {
      stale += file.stale ? file.bytes : 0;
      unknown += file.unknown ? file.bytes : 0;
    }
    sample.shm_stale_bytes = stale;
    sample.shm_unknown_bytes = unknown;
    if (memo != nullptr) memo->shm_files = std::move(*files);
    return {};
  });
}

}  // namespace headroom
