#include "core/explain/guarded_map.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <mutex>
#include <utility>

namespace headroom {

namespace {

/// The live maps the handler knows, by address range. An entry is claimed by setting
/// `end` from 0, filled, then published by `begin`; the handler reads only atomics.
struct Entry {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> lost{false};
};
constexpr std::size_t kEntries = 64;
std::array<Entry, kEntries> entries;
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);

std::mutex install_mutex;
std::size_t installed = 0;     ///< live maps; the handler is in place while > 0
struct sigaction previous {};  ///< what SIGBUS did before; written before installing
std::uintptr_t page_size = 4096;

void on_sigbus(int signal, siginfo_t* info, void* context) {
  // A fault on a page the file lost (BUS_ADRERR), not a SIGBUS someone sent (kill, sigqueue:
  // si_code <= 0, and si_addr is then not an address).
  const bool fault = info->si_code > 0;
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Entry& entry : entries) {
    if (info->si_code != BUS_ADRERR) break;
    const std::uintptr_t begin = entry.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= entry.end.load(std::memory_order_relaxed))
      continue;
    // The file lost this page: zeros in its place, and the reader is told.
    void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
    if (::mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      entry.lost.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  // Not ours (or no page to put there): what was there before.
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler == SIG_IGN && !fault) {
    // A sent SIGBUS that was ignored stays ignored (a fault cannot be).
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
  } else {
    // The default: the process dies of SIGBUS as it would have without us. Raised again
    // (blocked until this handler returns); a fault would also come back by itself.
    struct sigaction restore {};
    restore.sa_handler = SIG_DFL;
    ::sigemptyset(&restore.sa_mask);
    ::sigaction(SIGBUS, &restore, nullptr);
    ::raise(SIGBUS);
  }
}

bool install() {
  std::lock_guard lock(install_mutex);
  if (installed == 0) {
    page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction ours {};
    ours.sa_sigaction = on_sigbus;
    ours.sa_flags = SA_SIGINFO;
    ::sigemptyset(&ours.sa_mask);
    if (::sigaction(SIGBUS, nullptr, &previous) != 0 || ::sigaction(SIGBUS, &ours, nullptr) != 0)
      return false;
  }
  ++installed;
  return true;
}

void uninstall() {
  std::lock_guard lock(install_mutex);
  if (--installed != 0) return;
  // Put back what was there, unless someone replaced us meanwhile.
  struct sigaction now {};
  if (::sigaction(SIGBUS, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
      now.sa_sigaction == on_sigbus) {
    ::sigaction(SIGBUS, &previous, nullptr);
  }
}

/// Claims a free entry for [begin, end); -1 when all are taken.
int claim(std::uintptr_t begin, std::uintptr_t end) {
  for (std::size_t i = 0; i < kEntries; ++i) {
    std::uintptr_t free = 0;
    if (entries[i].end.compare_exchange_strong(free, end, std::memory_order_acq_rel)) {
      entries[i].lost.store(false, std::memory_order_relaxed);
      entries[i].begin.store(begin, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unclaim(int slot) {
  Entry& entry = entries[static_cast<std::size_t>(slot)];
  entry.begin.store(0, std::memory_order_release);
  entry.end.store(0, std::memory_order_release);
}

}  // namespace

Result<GuardedMap> GuardedMap::map(int fd, std::uint64_t offset, std::size_t length,
                                   const std::string& name) {
  if (length == 0) return fail(Error{Error::Code::kInvalidArgument, name + ": nothing to map"});
  if (!install()) return fail(Error::from_errno(errno, "SIGBUS handler"));
  GuardedMap map;
  const std::uint64_t aligned = offset & ~static_cast<std::uint64_t>(page_size - 1);
  map.mapped_ = length + static_cast<std::size_t>(offset - aligned);
  void* base = ::mmap(nullptr, map.mapped_, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(aligned));
  if (base == MAP_FAILED) {
    const int error = errno;
    uninstall();
    return fail(Error::from_errno(error, name));
  }
  map.base_ = static_cast<char*>(base);
  map.data_ = map.base_ + (offset - aligned);
  map.length_ = length;
  map.slot_ = claim(reinterpret_cast<std::uintptr_t>(base),
                    reinterpret_cast<std::uintptr_t>(base) + map.mapped_);
  if (map.slot_ < 0) {
    // Every entry taken: no guard for this one, so it must not be used.
    ::munmap(base, map.mapped_);
    map.base_ = nullptr;
    uninstall();
    return fail(Error{Error::Code::kIo, name + ": no room to guard another mapping"});
  }
  (void)::madvise(base, map.mapped_, MADV_SEQUENTIAL);
  return map;
}

bool GuardedMap::lost_pages() const {
  return slot_ >= 0 &&
         entries[static_cast<std::size_t>(slot_)].lost.load(std::memory_order_acquire);
}

void GuardedMap::release() {
  if (base_ == nullptr) return;
  // Forgotten by the handler first: once unmapped, the range may be given to someone else.
  unclaim(slot_);
  ::munmap(base_, mapped_);
  uninstall();
  base_ = nullptr;
  slot_ = -1;
}

GuardedMap::~GuardedMap() { release(); }

GuardedMap::GuardedMap(GuardedMap&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      mapped_(other.mapped_),
      data_(other.data_),
      length_(other.length_),
      slot_(std::exchange(other.slot_, -1)) {}

GuardedMap& GuardedMap::operator=(GuardedMap&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    mapped_ = other.mapped_;
    data_ = other.data_;
    length_ = other.length_;
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

}  // namespace headroom
