// Reading logs for explain: one pass, in 1 MiB chunks, gzip detected by its
// magic bytes (1f 8b) so "job.log.gz" and a gzip piped to stdin both work.

#include "core/explain/log_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace headroom {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;
/// A regular file is mapped this many bytes at a time: no copy out of the page
/// cache, and resident memory stays bounded by the window, not the file.
constexpr std::size_t kWindow = std::size_t{16} << 20;

/// Feeds [skip, size) of a regular file through mmap windows (mmap offsets must
/// be page-aligned, so windows start at 0 and the first `skip` bytes are passed
/// over). False when the first mapping fails; the caller then reads.
bool feed_mapped(LogAnalyzer& analyzer, int fd, std::uint64_t skip, std::uint64_t size) {
  for (std::uint64_t base = 0; base < size; base += kWindow) {
    const std::size_t length =
        static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, size - base));
    // MAP_POPULATE maps the window's cached pages in one call instead of a fault per 64 KiB.
    void* mapped = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd,
                          static_cast<off_t>(base));
    if (mapped == MAP_FAILED) {
      if (base == 0) return false;
      break;  // the file shrank under us: stop at what was read
    }
    ::madvise(mapped, length, MADV_SEQUENTIAL);
    const std::size_t from = base < skip ? static_cast<std::size_t>(skip - base) : 0;
    if (from < length)
      analyzer.feed(std::string_view(static_cast<const char*>(mapped) + from, length - from));
    ::munmap(mapped, length);
  }
  return true;
}

/// Reads until `buffer` is full or EOF; retries EINTR.
Result<std::size_t> read_some(int fd, char* buffer, std::size_t size, const std::string& name) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, buffer + got, size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno(errno, name));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
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
                                      const std::string& name) {
  analyzer.begin_source(source);
  std::vector<char> buffer(kChunk);
  auto first = read_some(fd, buffer.data(), 2, name);
  if (!first) return fail(first.error());
  if (*first == 2 && static_cast<unsigned char>(buffer[0]) == 0x1f &&
      static_cast<unsigned char>(buffer[1]) == 0x8b) {
    return feed_gzip(analyzer, fd, std::string_view(buffer.data(), 2), name);
  }
  std::uint64_t total = *first;
  analyzer.feed(std::string_view(buffer.data(), *first));
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
      static_cast<std::uint64_t>(info.st_size) > *first &&
      feed_mapped(analyzer, fd, *first, static_cast<std::uint64_t>(info.st_size))) {
    // A file that grows while it is read (a live log) is read to its end as of the fstat.
    return static_cast<std::uint64_t>(info.st_size);
  }
  while (true) {
    auto got = read_some(fd, buffer.data(), buffer.size(), name);
    if (!got) return fail(got.error());
    if (*got == 0) break;
    analyzer.feed(std::string_view(buffer.data(), *got));
    total += *got;
  }
  return total;
}

}  // namespace

Result<std::uint64_t> feed_file(LogAnalyzer& analyzer, const std::filesystem::path& path,
                                const std::string& name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::from_errno(errno, path.string()));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto result = feed_descriptor(analyzer, fd, name, path.string());
  ::close(fd);
  return result;
}

Result<std::uint64_t> feed_fd(LogAnalyzer& analyzer, int fd, const std::string& name) {
  return feed_descriptor(analyzer, fd, name, name.empty() ? "stdin" : name);
}

}  // namespace headroom
