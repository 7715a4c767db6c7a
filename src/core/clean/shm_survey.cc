// survey_shm: lists /dev/shm with fstatat relative to one directory fd and
// joins it with the in-use index of /dev/shm's device.

#include "core/clean/shm_survey.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <set>

#include "core/unique_fd.h"
#include "core/walk/dirents.h"

namespace headroom {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string_view shm_pattern(std::string_view name) {
  // torch_<pid>_<rand>_<n> (file_system strategy), torch_shm_manager's files.
  if (starts_with(name, "torch_")) return "torch";
  if (starts_with(name, "nccl-")) return "nccl";
  if (starts_with(name, "sem.")) return "sem";  // glibc's POSIX named semaphores
  if (starts_with(name, "psm_") || starts_with(name, "psm2_")) return "psm";
  if (starts_with(name, "__KMP_REGISTERED_LIB_")) return "kmp";
  return "other";
}

bool ShmEntry::regular() const { return S_ISREG(mode); }

namespace {

constexpr int kMaxDepth = 16;  // /dev/shm holds flat names; a deeper tree is not followed

// Appends the entries of the directory open at `dir_fd` (taken) to `out`, names prefixed.
// Listed with getdents64 into a buffer of its own: a watch lists /dev/shm at every sample,
// and opendir's fstat, two fcntls and malloc were as many syscalls as the listing.
void list_dir(int dir_fd, const std::string& prefix, const ShmListing& listing, int depth,
              std::vector<ShmEntry>& out) {
  const UniqueFd dir(dir_fd);
  std::array<char, 8192> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  // `name` is NUL-terminated in the buffer.
  walk::for_each_dirent(
      dir.get(), buffer.data(), buffer.size(), [&](std::string_view name, unsigned char) {
        struct stat info {};
        if (::fstatat(dir.get(), name.data(), &info, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone
        if (listing.recursive && S_ISDIR(info.st_mode) && depth < kMaxDepth) {
          const int child =
              ::openat(dir.get(), name.data(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (child >= 0) {
            list_dir(child, prefix + std::string(name) + "/", listing, depth + 1, out);
          }
        }
        if (listing.regular_only && !S_ISREG(info.st_mode)) return;
        if (S_ISREG(info.st_mode) && listing.min_age.count() > 0 &&
            std::chrono::system_clock::to_time_t(listing.now) - info.st_mtime <
                listing.min_age.count()) {
          return;
        }
        ShmEntry item;
        item.name = prefix + std::string(name);
        item.id = file_id_of(info);
        item.uid = info.st_uid;
        item.mode = info.st_mode;
        item.size_bytes = static_cast<std::uint64_t>(info.st_size);
        // tmpfs files are often sparse: count the pages they hold, not st_size.
        item.allocated_bytes = static_cast<std::uint64_t>(info.st_blocks) * 512;
        item.modified = std::chrono::system_clock::from_time_t(info.st_mtim.tv_sec);
        item.pattern = std::string(shm_pattern(name));
        out.push_back(std::move(item));
      });
}

}  // namespace

Result<std::vector<ShmEntry>> list_shm(const Context& context, const ShmListing& listing,
                                       FileId* dir_id) {
  const std::filesystem::path dir = context.root.dev("shm");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return fail(Error::from_errno(errno, dir.string()));
  struct stat dir_info {};
  if (::fstat(dir_fd, &dir_info) != 0) {
    const int saved = errno;
    ::close(dir_fd);
    return fail(Error::from_errno(saved, dir.string()));
  }
  if (dir_id != nullptr) *dir_id = file_id_of(dir_info);
  std::vector<ShmEntry> entries;
  list_dir(dir_fd, "", listing, 0, entries);
  std::sort(entries.begin(), entries.end(),
            [](const ShmEntry& a, const ShmEntry& b) { return a.name < b.name; });
  return entries;
}

void judge_shm_use(const Context& context, const InUseIndex& index, const Visibility& visibility,
                   LeaseWhen lease, std::vector<ShmEntry>& entries) {
  const std::filesystem::path dir = context.root.dev("shm");
  const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  for (ShmEntry& entry : entries) {
    entry.holders = holder_pids(index.holders(entry.id));
    if (!entry.regular()) continue;
    UniqueFd fd;
    int open_errno = 0;
    if (lease == LeaseWhen::kAlways || (!visibility.complete() && entry.holders.empty())) {
      fd = open_for_probe(dir_fd.get(), entry.name.c_str(), entry.id);
      if (!fd.ok()) open_errno = errno;
    }
    const UseAnswer answer = regular_file_use(index, visibility, entry.id, fd.get(), open_errno);
    entry.use = answer.use;
    entry.use_why = answer.why;
  }
}

namespace {

/// Decides every regular entry by the kernel's lease alone, without /proc (use_proof.h: a
/// refused lease proves a use, a granted one proves none). False, deciding nothing for
/// certain, when one entry gets no answer or /dev/shm uses more space than its listed files
/// hold: that space is a segment unlinked but still open or mapped (or a file deeper down),
/// which only a /proc scan can name.
bool answered_by_the_kernel(const Context& context, std::vector<ShmEntry>& entries) {
  if (context.syscalls == nullptr) return false;
  // Measured after the listing: what was created since counts as unexplained space.
  auto stats = context.syscalls->statvfs(context.root.dev("shm"));
  // A tmpfs mounted without a size limit (size=0) reports no blocks at all: its used space
  // says nothing about what unlinked segments hold.
  if (!stats || stats->total_bytes == 0) return false;
  // Each inode once: hard links list one segment's bytes twice, which would hide as many
  // bytes of an unlinked one.
  std::uint64_t listed = 0;
  std::set<FileId> seen;
  for (const ShmEntry& entry : entries) {
    if (seen.insert(entry.id).second) listed += entry.allocated_bytes;
  }
  if (stats->used_bytes() > listed) return false;
  const std::filesystem::path dir = context.root.dev("shm");
  const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd.ok()) return false;
  for (ShmEntry& entry : entries) {
    if (!entry.regular()) continue;  // never stale, whoever holds it
    const UniqueFd fd = open_for_probe(dir_fd.get(), entry.name.c_str(), entry.id);
    const LeaseAnswer answer = fd.ok() ? context.syscalls->write_lease(fd.get())
                               : errno == EWOULDBLOCK || errno == EAGAIN
                                   ? LeaseAnswer::kInUse  // someone else holds a lease on it
                                   : LeaseAnswer::kUnknown;
    if (answer == LeaseAnswer::kUnknown) return false;
    entry.use = answer == LeaseAnswer::kInUse ? Use::kInUse : Use::kUnused;
    entry.use_why = answer == LeaseAnswer::kInUse
                        ? "open or mapped (the kernel refused a lease; holders not looked up)"
                        : "no process has it open or mapped (the kernel granted an exclusive "
                          "lease)";
  }
  return true;
}

}  // namespace

Result<ShmSurvey> survey_shm(const Context& context, std::span<const int> vouched,
                             HolderScan scan) {
  ShmSurvey survey;
  auto entries = list_shm(context, ShmListing{}, &survey.dir_id);
  if (!entries) return fail(entries.error());
  survey.entries = std::move(*entries);
  if (scan == HolderScan::kWhenNeeded && answered_by_the_kernel(context, survey.entries)) {
    survey.scanned = false;
    survey.visibility.kernel = context.syscalls;
    if (auto segments = read_sysvipc_shm(context)) {
      survey.sysv = std::move(*segments);
    } else {
      survey.sysv_error = segments.error();
    }
    return survey;
  }
  ScanOptions options;
  options.devices = {survey.dir_id.device};
  options.include_cwd_root_exe = true;  // a process whose cwd is /dev/shm/dir holds it
  auto index = scan_in_use(context, options);
  if (!index) return fail(index.error());
  survey.index = std::move(*index);
  survey.visibility = visibility_of(context, survey.index, vouched);
  judge_shm_use(context, survey.index, survey.visibility, LeaseWhen::kAlways, survey.entries);

  // Unlinked but held: deleted holders on /dev/shm's device, one per inode.
  std::map<FileId, UnlinkedSegment> unlinked;
  for (const Holder& holder : survey.index.all()) {
    if (!holder.deleted || holder.file.device != survey.dir_id.device) continue;
    UnlinkedSegment& segment = unlinked[holder.file];
    segment.id = holder.file;
    segment.path = std::string(holder.original_path());
    // An fd's stat gives the file size; a mapping only the bytes mapped: keep the larger.
    segment.size_bytes = std::max(segment.size_bytes, holder.size_bytes);
    segment.holders.push_back(holder.pid);
  }
  for (auto& [id, segment] : unlinked) {
    std::sort(segment.holders.begin(), segment.holders.end());
    segment.holders.erase(std::unique(segment.holders.begin(), segment.holders.end()),
                          segment.holders.end());
    survey.unlinked.push_back(std::move(segment));
  }
  survey.sysv.assign(survey.index.sysv_segments().begin(), survey.index.sysv_segments().end());
  survey.sysv_error = survey.index.sysv_error();
  return survey;
}

}  // namespace headroom
