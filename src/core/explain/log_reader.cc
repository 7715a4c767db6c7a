// Reading logs for explain: one pass, in 4 MiB reads, gzip detected by its
// magic bytes (1f 8b) so "job.log.gz" and a gzip piped to stdin both work.

#include "core/explain/log_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "core/explain/guarded_map.h"
#include "core/threads.h"

namespace headroom {

namespace {

/// Bytes read at a time (the head of a file, gzip, pipes; a large plain file is mapped a
/// chunk at a time, guarded against being cut: guarded_map.h). Memory stays bounded by it.
constexpr std::size_t kChunk = std::size_t{4} << 20;

/// The read buffer, on transparent huge pages where the kernel allows (madvise mode, the
/// default): the copy out of the page cache then costs a quarter of what it does into 4 KiB
/// pages (measured on a 1 GiB log: 0.19 s against 0.77 s of system time).
class ReadBuffer {
 public:
  explicit ReadBuffer(std::size_t size = kChunk) : size_(size) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    void* memory = nullptr;
    if (::posix_memalign(&memory, kHuge, size_) != 0) throw std::bad_alloc();
    data_ = static_cast<char*>(memory);
    (void)::madvise(data_, size_, MADV_HUGEPAGE);
  }
  ~ReadBuffer() { std::free(data_); }
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  [[nodiscard]] char* data() { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  std::size_t size_;
  char* data_ = nullptr;
};

/// Reads until `buffer` is full or EOF, at the descriptor's position or at `offset` (pread);
/// retries EINTR.
Result<std::size_t> read_some(int fd, char* buffer, std::size_t size, const std::string& name,
                              std::optional<std::uint64_t> offset = std::nullopt) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = offset
                          ? ::pread(fd, buffer + got, size - got, static_cast<off_t>(*offset + got))
                          : ::read(fd, buffer + got, size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno(errno, name));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

/// The bytes of a chunk at `at` of `got` that the file still holds after it was cut.
std::size_t cut_length(int fd, std::uint64_t at, std::size_t got) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<std::uint64_t>(info.st_size) <= at) return 0;
  return static_cast<std::size_t>(
      std::min<std::uint64_t>(got, static_cast<std::uint64_t>(info.st_size) - at));
}

/// CPUs this process may run on (its affinity mask: taskset, cgroup cpusets).
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

/// Feeds [offset, limit) of the regular file `fd` to `analyzer`, `threads` threads reading
/// and scanning a chunk each at once; the calling thread feeds the scanned chunks in file
/// order. A chunk that comes back short (the file was truncated under us) is the end: what
/// it holds is fed, nothing after it. Returns the bytes fed.
Result<std::uint64_t> feed_parallel(LogAnalyzer& analyzer, int fd, std::uint64_t offset,
                                    std::uint64_t limit, unsigned threads, std::size_t chunk,
                                    bool map, const std::string& name) {
  const std::uint64_t chunks = (limit - offset + chunk - 1) / chunk;
  // Two slots a thread: one being fed while the next is scanned.
  struct Slot {
    std::unique_ptr<ReadBuffer> buffer;  ///< made when a chunk is read, not mapped
    std::optional<GuardedMap> mapped;    ///< the chunk, when it is mapped
    const char* data = nullptr;          ///< the chunk's bytes, in one or the other
    BlockScan scan;
    std::size_t got = 0;
    std::uint64_t ready = ~std::uint64_t{0};  ///< the chunk the slot holds, once scanned
  };
  const std::size_t slot_count = std::size_t{2} * threads;
  std::vector<std::unique_ptr<Slot>> slots;
  for (std::size_t i = 0; i < slot_count; ++i) slots.push_back(std::make_unique<Slot>());
  std::vector<LiteralScanner> scanners;
  for (unsigned t = 0; t < threads; ++t) scanners.push_back(analyzer.literal_scanner());

  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t next = 0;      // the next chunk a thread takes
  std::uint64_t consumed = 0;  // chunks fed so far: chunk k may use its slot once k - slots is
  bool stop = false;
  std::optional<Error> error;

  // Reads and scans chunk k into its slot, or records the error and stops everyone.
  const auto process = [&](std::uint64_t k, LiteralScanner& scanner) {
    Slot& slot = *slots[k % slot_count];
    const std::uint64_t at = offset + k * chunk;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, limit - at));
    Result<std::size_t> got = want;
    try {
      if (map && !slot.mapped) {
        auto mapped = GuardedMap::map(fd, at, want, name);
        if (mapped) slot.mapped = std::move(*mapped);
      }
      if (slot.mapped) {
        slot.data = slot.mapped->bytes().data();
      } else {
        if (!slot.buffer) slot.buffer = std::make_unique<ReadBuffer>(chunk);
        slot.data = slot.buffer->data();
        got = read_some(fd, slot.buffer->data(), want, name, at);
      }
      if (got) scanner.scan_block(std::string_view(slot.data, *got), slot.scan);
      if (got && slot.mapped && slot.mapped->lost_pages()) {
        // Cut while mapped: the chunk ends where the file now does; scanned again to there.
        got = cut_length(fd, at, *got);
        scanner.scan_block(std::string_view(slot.data, *got), slot.scan);
      }
    } catch (const std::bad_alloc&) {
      got = fail(Error{Error::Code::kIo, name + ": out of memory"});
    }
    std::lock_guard lock(mutex);
    if (!got) {
      if (!error) error = got.error();
      stop = true;
    } else {
      slot.got = *got;
      slot.ready = k;
    }
    changed.notify_all();
  };
  const auto work = [&](LiteralScanner& scanner) {
    while (true) {
      std::uint64_t k = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || next >= chunks || next < consumed + slot_count; });
        if (stop || next >= chunks) return;
        k = next++;
      }
      process(k, scanner);
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    // A task limit (ulimit -u, pids.max) may refuse one: fewer threads take the same chunks;
    // with none, the loop below reads each itself.
    auto worker = try_start_thread([&work, &scanner = scanners[t]] { work(scanner); });
    if (!worker) break;
    workers.push_back(std::move(*worker));
  }

  std::uint64_t total = 0;
  for (std::uint64_t k = 0; k < chunks; ++k) {
    Slot& slot = *slots[k % slot_count];
    if (workers.empty()) process(k, scanners[0]);
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return stop || slot.ready == k; });
      if (slot.ready != k) break;  // an error
    }
    const std::uint64_t at = offset + k * chunk;
    bool whole = slot.got == std::min<std::uint64_t>(chunk, limit - at);
    analyzer.feed_scanned(std::string_view(slot.data, slot.got), slot.scan);
    total += slot.got;
    if (slot.mapped) {
      // A page lost while it was fed read as zeros: the file was cut, it ends here.
      if (slot.mapped->lost_pages()) whole = false;
      slot.mapped.reset();
    }
    std::lock_guard lock(mutex);
    slot.ready = ~std::uint64_t{0};
    consumed = k + 1;
    if (!whole) stop = true;  // truncated under us: the file ends here
    changed.notify_all();
    if (stop) break;
  }
  {
    std::lock_guard lock(mutex);
    stop = true;
    changed.notify_all();
  }
  for (std::thread& worker : workers) worker.join();
  if (error) return fail(*error);
  return total;
}

Result<std::uint64_t> feed_gzip(LogAnalyzer& analyzer, int fd, std::string_view head,
                                const std::string& name) {
  z_stream stream{};
  // 16 + MAX_WBITS: gzip framing. Concatenated members (log rotation appends) continue after a
  // reset.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK)
    return fail(Error{Error::Code::kIo, name + ": zlib init failed"});
  std::vector<char> in(kChunk);
  std::vector<char> out(kChunk);
  std::memcpy(in.data(), head.data(), head.size());
  stream.next_in = reinterpret_cast<Bytef*>(in.data());
  stream.avail_in = static_cast<uInt>(head.size());
  std::uint64_t total = 0;
  while (true) {
    if (stream.avail_in == 0) {
      auto got = read_some(fd, in.data(), in.size(), name);
      if (!got) {
        inflateEnd(&stream);
        return fail(got.error());
      }
      if (*got == 0) break;
      stream.next_in = reinterpret_cast<Bytef*>(in.data());
      stream.avail_in = static_cast<uInt>(*got);
    }
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    const int status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
      const std::string why = stream.msg != nullptr ? stream.msg : "inflate failed";
      inflateEnd(&stream);
      return fail(Error::parse(fmt::format("{}: corrupt gzip data ({})", name, why)));
    }
    const std::size_t produced = out.size() - stream.avail_out;
    analyzer.feed(std::string_view(out.data(), produced));
    total += produced;
    if (status == Z_STREAM_END) inflateReset(&stream);
  }
  inflateEnd(&stream);
  return total;
}

/// `source` names evidence; `name` names errors.
Result<std::uint64_t> feed_descriptor(LogAnalyzer& analyzer, int fd, const std::string& source,
                                      const std::string& name, const ReadOptions& options) {
  analyzer.begin_source(source);
  ReadBuffer buffer;
  auto first = read_some(fd, buffer.data(), 2, name);
  if (!first) return fail(first.error());
  if (*first == 2 && static_cast<unsigned char>(buffer.data()[0]) == 0x1f &&
      static_cast<unsigned char>(buffer.data()[1]) == 0x8b) {
    return feed_gzip(analyzer, fd, std::string_view(buffer.data(), 2), name);
  }
  std::uint64_t total = *first;
  analyzer.feed(std::string_view(buffer.data(), *first));
  // A regular file that grows while it is read (a live log) is read to its end as of now.
  std::uint64_t limit = ~std::uint64_t{0};
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode))
    limit = std::max<std::uint64_t>(static_cast<std::uint64_t>(info.st_size), total);
  const unsigned threads =
      std::min(options.threads == 0 ? usable_cpus() : options.threads, ReadOptions::kMaxThreads);
  const std::size_t chunk = std::max<std::size_t>(options.chunk, 1);
  // A large plain file is scanned on several threads, in two stages once the first stage's
  // literals are compiled: on another thread, while this one reads the head.
  struct Joined {
    std::optional<std::thread> thread;
    ~Joined() {
      if (thread) thread->join();
    }
  } preparing;
  if (threads > 1 && limit != ~std::uint64_t{0} && limit - total >= options.two_stages &&
      limit - total >= std::uint64_t{3} * chunk) {
    preparing.thread =
        try_start_thread([scanner = analyzer.literal_scanner()] { scanner.prepare(); });
  }
  bool head_read = false;
  while (total < limit) {
    // Once the head is read (it decides whether the source has an envelope to undo), a
    // plain file of several chunks more is scanned on several threads.
    if (threads > 1 && head_read && limit != ~std::uint64_t{0} &&
        limit - total >= std::uint64_t{2} * chunk && analyzer.passes_through()) {
      auto fed = feed_parallel(analyzer, fd, total, limit, threads, chunk, options.map, name);
      if (!fed) return fail(fed.error());
      return total + *fed;
    }
    const std::size_t want = static_cast<std::size_t>(
        std::min<std::uint64_t>(std::min(buffer.size(), chunk), limit - total));
    auto got = read_some(fd, buffer.data(), want, name);
    if (!got) return fail(got.error());
    if (*got == 0) break;  // EOF, or the file was truncated under us
    analyzer.feed(std::string_view(buffer.data(), *got));
    total += *got;
    head_read = true;
  }
  return total;
}

}  // namespace

Result<std::uint64_t> feed_file(LogAnalyzer& analyzer, const std::filesystem::path& path,
                                const std::string& name, const ReadOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::from_errno(errno, path.string()));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto result = feed_descriptor(analyzer, fd, name, path.string(), options);
  ::close(fd);
  return result;
}

Result<std::uint64_t> feed_fd(LogAnalyzer& analyzer, int fd, const std::string& name) {
  return feed_descriptor(analyzer, fd, name, name.empty() ? "stdin" : name, ReadOptions{1});
}

}  // namespace headroom
