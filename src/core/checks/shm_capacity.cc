// shm.capacity: is /dev/shm there, a writable tmpfs, and big enough for the
// DataLoader and NCCL? PyTorch's DataLoader keeps up to
// num_workers x prefetch_factor batches in flight, each in its own shared
// memory segment (torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter);
// NCCL's shm transport maps one buffer per connection (src/transport/shm.cc).

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/mountinfo.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kId = "shm.capacity";
constexpr std::string_view kWhy =
    "DataLoader workers hand every batch to the main process through /dev/shm; when it "
    "fills, a worker dies of SIGBUS (\"DataLoader worker ... killed by signal: Bus error\"), "
    "and NCCL fails with \"Error while creating shared memory segment\".";

// Docker's default --shm-size; containerd and CRI-O use the same.
constexpr std::uint64_t kDockerDefault = 64 * kMiB;

// Whether a file can be created in `dir`: the effective answer, ACLs and
// read-only mounts included, which access(2) does not always give.
Result<void> try_create(const std::filesystem::path& dir) {
  const std::filesystem::path probe = dir / fmt::format(".headroom-probe-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(Error::from_errno(errno, dir.string()));
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

}  // namespace

/// Peak shared memory of the DataLoaders of all ranks, an upper bound of the measured peak:
/// R x ((W x P + 2) x B + 4 x (W + 2) pages). The iterator keeps W x P batches in flight;
/// when one arrives it asks for the next before the loop lets go of the batch it holds,
/// and `for batch in loader` still holds the previous one while next() runs: two more.
/// The pages are the semaphores of the index and result queues (sem.mp-*), 3 x W + 8 of
/// them measured. Measured with PyTorch 1.13 (bench/python/RESULTS.md): 30 runs of 9 shapes,
/// peaks 0.37-1.00 of this bound, never above it.
std::uint64_t dataloader_shm_need(const CheckOptions& options) {
  constexpr std::uint64_t kBatchesInHand = 2;
  constexpr std::uint64_t kPage = 4096;
  if (options.workers == 0 || !options.batch_bytes) return 0;
  const std::uint64_t batches = options.workers * options.prefetch + kBatchesInHand;
  const std::uint64_t semaphores = 4 * (options.workers + 2) * kPage;
  return options.ranks * (batches * *options.batch_bytes + semaphores);
}

/// NCCL's shm transport: each connection maps one segment of 9,637,888 bytes
/// (SIMPLE 4 MiB + LL128 4,915,200 + LL 524,288 buffers + a 4 KiB header, at
/// NCCL's default NCCL_BUFFSIZE); each of G ranks receives on 2 channels for
/// the ring and 2 for the tree.
std::uint64_t nccl_shm_need(const CheckOptions& options) {
  constexpr std::uint64_t kConnectionBytes = 9'637'888;
  constexpr std::uint64_t kConnectionsPerRank = 4;
  if (options.gpus < 2) return 0;
  return options.gpus * kConnectionsPerRank * kConnectionBytes;
}

std::vector<Finding> check_shm_capacity(const CheckInput& input) {
  const Context& context = input.context;
  const CheckOptions& options = input.options;
  const std::filesystem::path shm = context.root.dev("shm");

  Finding finding;
  finding.id = std::string(kId);
  finding.subject = "/dev/shm";
  finding.why = std::string(kWhy);

  struct stat info {};
  if (::stat(shm.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    finding.severity = Severity::kCritical;
    finding.summary =
        "/dev/shm does not exist: DataLoader workers and torch.multiprocessing "
        "cannot create semaphores or shared tensors";
    finding.add("shm_present", false);
    ShmFacts facts = read_shm_facts(context);
    facts.size_bytes = 0;  // there is none: one must be mounted
    facts.tmpfs = false;
    finding.remedy = shm_remedies(input.runtime, 1 * kGiB, facts);
    return {finding};
  }
  finding.add("shm_present", true);

  auto stats = context.syscalls->statvfs(shm);
  if (!stats) return {unknown_finding(finding.id, finding.subject, stats.error().message)};

  std::string fstype = "unknown";
  if (auto mounts = read_mountinfo(context)) {
    if (const MountEntry* mount = find_mount(*mounts, "/dev/shm")) fstype = mount->fstype;
  }
  finding.add("fstype", fstype);
  finding.add("size_bytes", stats->total_bytes, "bytes");
  finding.add("avail_bytes", stats->avail_bytes, "bytes");
  finding.add("used_percent", stats->used_percent(), "percent");
  // What bounds the size a remedy may ask for (explain and run read them back from here).
  ShmFacts facts = read_shm_facts(context);
  facts.size_bytes = stats->total_bytes;
  facts.tmpfs = fstype == "tmpfs" || fstype == "unknown";
  if (facts.memory_bytes) finding.add("memory_total_bytes", *facts.memory_bytes, "bytes");
  if (facts.memory_limit_bytes)
    finding.add("memory_limit_bytes", *facts.memory_limit_bytes, "bytes");

  const std::uint64_t loader_need = dataloader_shm_need(options);
  const std::uint64_t nccl_need = nccl_shm_need(options);
  const std::uint64_t need = loader_need + nccl_need;
  if (loader_need > 0) finding.add("dataloader_need_bytes", loader_need, "bytes");
  if (nccl_need > 0) finding.add("nccl_need_bytes", nccl_need, "bytes");
  // The need is already an upper bound of the measured peak (the batches in the
  // loop's hands included); 10% more covers NCCL headers and allocator rounding.
  const std::uint64_t with_margin =
      need + static_cast<std::uint64_t>(std::ceil(static_cast<double>(need) * 0.1));
  if (need > 0) finding.add("need_with_margin_bytes", with_margin, "bytes");

  const auto recommend = std::max(with_margin, stats->used_bytes() + with_margin);
  // The size every resize remedy asks for; run's post-mortem and explain read it from
  // here, so a job is told one size (issue 20 #14).
  const std::uint64_t target =
      need > 0 ? recommend : std::max<std::uint64_t>(recommend, kShmSizeWithoutShape);
  finding.add("recommended_size_bytes", target, "bytes");

  if (stats->read_only) {
    finding.severity = Severity::kCritical;
    finding.summary =
        "/dev/shm is mounted read-only: creating the DataLoader fails with "
        "\"OSError: [Errno 30] Read-only file system\"";
    // Read-only: a remount with its size is the fix even when the size is already enough.
    ShmFacts remount = facts;
    remount.size_bytes.reset();
    finding.remedy = shm_remedies(input.runtime, std::max<std::uint64_t>(recommend, kGiB), remount);
    return {finding};
  }
  if (auto writable = try_create(shm); !writable) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format("/dev/shm is not writable for uid {}: {}",
                                  context.syscalls->effective_uid(), writable.error().message);
    finding.remedy.emplace_back("sudo chmod 1777 /dev/shm");
    return {finding};
  }

  const bool tmpfs = facts.tmpfs;
  if (need > 0 && need > stats->avail_bytes) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "/dev/shm has {} free of {} but the job needs {} ({}): workers will die of SIGBUS",
        format_bytes(stats->avail_bytes), format_bytes(stats->total_bytes), format_bytes(need),
        loader_need > 0
            ? fmt::format("{} x ({} x prefetch {} + 2 in the loop's hands) x {} batches",
                          format_count(options.ranks, "rank"),
                          format_count(options.workers, "worker"), options.prefetch,
                          format_bytes(options.batch_bytes.value_or(0)))
            : "NCCL shm transport");
  } else if (need > 0 && with_margin > stats->avail_bytes) {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "/dev/shm has {} free; the job needs {} ({} with margin): too tight",
        format_bytes(stats->avail_bytes), format_bytes(need), format_bytes(with_margin));
  } else if (stats->used_percent() >= options.critical_percent) {
    finding.severity = Severity::kCritical;
    finding.summary =
        fmt::format("/dev/shm is {} full ({} free of {})", format_percent(stats->used_percent()),
                    format_bytes(stats->avail_bytes), format_bytes(stats->total_bytes));
  } else if (stats->used_percent() >= options.warn_percent) {
    finding.severity = Severity::kWarn;
    finding.summary =
        fmt::format("/dev/shm is {} full ({} free of {})", format_percent(stats->used_percent()),
                    format_bytes(stats->avail_bytes), format_bytes(stats->total_bytes));
  } else if (need == 0 && stats->total_bytes <= kDockerDefault) {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "/dev/shm is only {} (Docker's default): a DataLoader with workers usually needs more; "
        "pass --workers and --batch-bytes for a verdict",
        format_bytes(stats->total_bytes));
  } else if (!tmpfs) {
    finding.severity = Severity::kWarn;
    finding.summary =
        fmt::format("/dev/shm is on {}, not tmpfs: shared tensors go through disk", fstype);
  } else {
    finding.severity = Severity::kOk;
    finding.summary =
        need > 0 ? fmt::format("/dev/shm has {} free of {}; the job needs {}",
                               format_bytes(stats->avail_bytes), format_bytes(stats->total_bytes),
                               format_bytes(need))
                 : fmt::format("/dev/shm has {} free of {}", format_bytes(stats->avail_bytes),
                               format_bytes(stats->total_bytes));
    return {finding};
  }

  std::vector<std::string> lower;
  if (loader_need > 0) {
    lower.push_back(
        fmt::format("lower the need: fewer DataLoader workers (num_workers) or prefetch_factor=1 "
                    "(each worker keeps prefetch_factor batches of {} in /dev/shm)",
                    format_bytes(options.batch_bytes.value_or(0))));
  }
  if (nccl_need > 0) {
    lower.emplace_back(
        "as a last resort for NCCL: export NCCL_SHM_DISABLE=1 (falls back to slower "
        "sockets/P2P)");
  }
  finding.remedy = shm_remedies(input.runtime, target, facts, lower);
  if (stats->used_bytes() > stats->total_bytes / 4) {
    finding.remedy.emplace_back(
        "see what holds the space: headroom check --only shm.stale; reclaim: headroom clean --shm");
  }
  return {finding};
}

}  // namespace headroom
