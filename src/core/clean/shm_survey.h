#pragma once
// What occupies /dev/shm and SysV shared memory, and who holds each piece:
// the input of the shm.stale check and of `clean --shm`. A segment is stale
// only when no process has it open or mapped; the pid in torch_<pid>_... is
// the creating worker, often gone while the job is healthy
// (shared/corpus/README.md, section 7), so names prove nothing.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/inuse/inuse_index.h"
#include "core/inuse/use_proof.h"

namespace headroom {

/// Which producer a /dev/shm name belongs to: "torch", "nccl", "sem", "psm",
/// "kmp" (Intel OpenMP's __KMP_REGISTERED_LIB_*), or "other".
[[nodiscard]] std::string_view shm_pattern(std::string_view name);

/// One entry directly in /dev/shm.
struct ShmEntry {
  std::string name;
  FileId id;
  uid_t uid = 0;
  mode_t mode = 0;
  std::uint64_t size_bytes = 0;       ///< st_size
  std::uint64_t allocated_bytes = 0;  ///< st_blocks x 512: what it takes from the tmpfs
  std::chrono::system_clock::time_point modified;
  std::string pattern;       ///< shm_pattern(name)
  std::vector<int> holders;  ///< pids that have it open or mapped (ascending, unique)
  /// Whether anyone uses it, by the one rule of use_proof.h (regular files; other types
  /// are kUnknown and never stale).
  Use use = Use::kUnknown;
  std::string use_why;  ///< the evidence, in words
  [[nodiscard]] bool regular() const;
};

/// A /dev/shm file already unlinked but still open or mapped: ls misses it, df counts it.
struct UnlinkedSegment {
  FileId id;
  std::string path;  ///< where it was, e.g. "/dev/shm/torch_12_34_5"
  std::uint64_t size_bytes = 0;
  std::vector<int> holders;
};

/// Which of /dev/shm's entries a listing returns. check and clean look at the entries
/// directly in it (what clean removes); watch counts every regular file below it old
/// enough to be stale (what fills the tmpfs, seen every sample).
struct ShmListing {
  bool recursive = false;     ///< also what is inside its directories ("dir/file" names)
  bool regular_only = false;  ///< only regular files (what can be stale)
  /// Leave out regular files modified less than this long before `now`.
  std::chrono::seconds min_age{0};
  std::chrono::system_clock::time_point now;
};

/// Lists /dev/shm under the root prefix with fstatat relative to directory fds, never
/// following a symlink; sorted by name. `dir_id`: /dev/shm itself, when given.
[[nodiscard]] Result<std::vector<ShmEntry>> list_shm(const Context& context,
                                                     const ShmListing& listing,
                                                     FileId* dir_id = nullptr);

/// When a regular entry needs the kernel's lease to be judged (use_proof.h): always (check,
/// clean: they act on the answer), or only when the scan could not see every process (watch:
/// a daemon that sees everyone takes no lease every rescan).
enum class LeaseWhen { kAlways, kOnlyWhenUnseen };

/// Decides the use of the regular entries of a listing from `index` (a scan of /dev/shm's
/// device) by the one rule of use_proof.h; fills holders, use and use_why.
void judge_shm_use(const Context& context, const InUseIndex& index, const Visibility& visibility,
                   LeaseWhen lease, std::vector<ShmEntry>& entries);

/// Whether survey_shm scans /proc for who holds what: always (clean names the holders), or
/// only when the kernel's answers leave a question open (check: a stale count needs no names).
enum class HolderScan { kAlways, kWhenNeeded };

/// /dev/shm and SysV shm with their holders.
struct ShmSurvey {
  std::filesystem::path dir = "/dev/shm";  ///< host path
  FileId dir_id;
  std::vector<ShmEntry> entries;
  std::vector<UnlinkedSegment> unlinked;
  std::vector<SysvSegment> sysv;
  std::optional<Error> sysv_error;
  InUseIndex index;       ///< the scan the survey was made from (devices: /dev/shm's)
  Visibility visibility;  ///< what the scan could not see (vouched pids left out)
  /// false: no /proc scan was needed (HolderScan::kWhenNeeded): the kernel's lease answered
  /// for every regular entry and all of /dev/shm's used space is in its listed files, so
  /// nothing unlinked is held. `index` is then empty and entries name no holders.
  bool scanned = true;
};

/// Lists /dev/shm (under the root prefix), scans who holds what on its device and decides
/// each regular file's use. `vouched`: unreadable pids the caller vouches hold nothing here.
[[nodiscard]] Result<ShmSurvey> survey_shm(const Context& context,
                                           std::span<const int> vouched = {},
                                           HolderScan scan = HolderScan::kAlways);

/// Whether a survey's entry is stale: a regular file proven unused.
[[nodiscard]] inline bool stale(const ShmEntry& entry) {
  return entry.regular() && entry.use == Use::kUnused;
}
/// Whether nobody visible holds it but it could not be proven unused.
[[nodiscard]] inline bool use_unknown(const ShmEntry& entry) {
  return entry.regular() && entry.use == Use::kUnknown;
}

}  // namespace headroom
