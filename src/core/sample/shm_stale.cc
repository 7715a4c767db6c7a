// The "shm_stale" probe: bytes of /dev/shm files that no process holds open
// or mapped and that are older than a minimum age. They are what a crashed
// DataLoader or NCCL leaves behind (torch_shm_*, nccl-*), and they fill the
// tmpfs just as live segments do. Uses the in-use index (fds and maps of
// every readable process) that `who` and `clean` share.

#include <sys/stat.h>

#include <fmt/format.h>

#include "core/inuse/inuse_index.h"
#include "core/sample/sample_probes.h"

namespace headroom {

void sample_shm_stale(const Context& context, const SampleOptions& options, Sample& sample) {
  run_probe(context, sample, "shm_stale", [&]() -> Result<void> {
    const std::filesystem::path shm = context.root.dev("shm");
    struct stat shm_info {};
    if (::stat(shm.c_str(), &shm_info) != 0) return fail(Error::from_errno(errno, shm.string()));
    // First the candidates: regular files old enough to be stale. Most of the
    // time there are none, and the /proc scan (the costly part, ~10 ms on a
    // quiet host) is skipped.
    struct Candidate {
      FileId id;
      std::uint64_t bytes;
    };
    std::vector<Candidate> candidates;
    const auto now = std::chrono::system_clock::to_time_t(sample.time);
    std::error_code error;
    std::filesystem::recursive_directory_iterator entry(
        shm, std::filesystem::directory_options::skip_permission_denied, error);
    for (const std::filesystem::recursive_directory_iterator end; !error && entry != end;
         entry.increment(error)) {
      struct stat info {};
      if (::lstat(entry->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
      if (now - info.st_mtime < options.shm_stale_min_age.count()) continue;
      // tmpfs files are often sparse: count the pages they hold, not st_size.
      candidates.push_back({{static_cast<std::uint64_t>(info.st_dev),
                             static_cast<std::uint64_t>(info.st_ino)},
                            static_cast<std::uint64_t>(info.st_blocks) * 512});
    }
    if (error) return fail(Error::from_errno(error.value(), shm.string()));
    std::uint64_t stale = 0;
    if (!candidates.empty()) {
      ScanOptions scan;
      scan.devices = {static_cast<std::uint64_t>(shm_info.st_dev)};
      scan.include_cwd_root_exe = false;
      scan.include_sysv = false;
      const auto index = scan_in_use(context, scan);
      if (!index) return fail(index.error());
      for (const Candidate& candidate : candidates) {
        if (!index->is_held(candidate.id)) stale += candidate.bytes;
      }
    }
    sample.shm_stale_bytes = stale;
    return {};
  });
}

}  // namespace headroom
