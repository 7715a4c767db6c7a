// A scrape of `headroom watch --listen` allocates nothing in steady state: the
// page is rendered once per sample (SnapshotCollector::publish) and the server
// sends it from there (daemon/http_server.h). Counted by replacing the global
// operator new in this test binary; the count is taken only while the scrapes
// below run, with no other thread in the process doing work.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "daemon/http_server.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
}  // namespace

#if defined(__SANITIZE_ADDRESS__)
#define HEADROOM_COUNT_ALLOCATIONS 0  // ASan owns operator new
#else
#define HEADROOM_COUNT_ALLOCATIONS 1
namespace {

void* allocate(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  if (void* block = std::malloc(size == 0 ? 1 : size)) return block;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* block) noexcept { std::free(block); }
void operator delete[](void* block) noexcept { std::free(block); }
void operator delete(void* block, std::size_t) noexcept { std::free(block); }
void operator delete[](void* block, std::size_t) noexcept { std::free(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { std::free(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { std::free(block); }
#endif

namespace headroom::daemon {
namespace {

/// A client socket connected to the loopback `port`, or -1.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// GET /metrics on the open connection `fd`, the response (head and a body of its
/// Content-Length) read into `buffer` without allocating. Its size, or 0 on a failure.
std::size_t scrape_kept(int fd, std::span<char> buffer) {
  constexpr std::string_view kRequest = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  if (::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(kRequest.size())) {
    return 0;
  }
  std::size_t size = 0;
  std::size_t whole = 0;  // known once the head is in
  while (whole == 0 || size < whole) {
    const ssize_t got = ::recv(fd, buffer.data() + size, buffer.size() - size, 0);
    if (got <= 0) return 0;
    size += static_cast<std::size_t>(got);
    const std::string_view text(buffer.data(), size);
    const std::size_t blank = text.find("\r\n\r\n");
    const std::size_t field = text.find("Content-Length: ");
    if (whole == 0 && blank != std::string_view::npos && field < blank) {
      whole = blank + 4 + std::strtoul(buffer.data() + field + 16, nullptr, 10);
    }
  }
  return size;
}

/// GET /metrics over a fresh connection that asks to be closed, the response read to EOF
/// into `buffer` (no allocation: raw calls and a caller's buffer). Its size, or 0 on a failure.
std::size_t scrape(int port, std::span<char> buffer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::size_t size = 0;
  constexpr std::string_view kRequest =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(kRequest.size())) {
    for (ssize_t got; size < buffer.size() &&
                      (got = ::recv(fd, buffer.data() + size, buffer.size() - size, 0)) > 0;) {
      size += static_cast<std::size_t>(got);
    }
  }
  ::close(fd);
  return size;
}

TEST(HttpServer, AScrapeAllocatesNothingOnceWarm) {
  if (!HEADROOM_COUNT_ALLOCATIONS) GTEST_SKIP() << "ASan replaces operator new";
  auto collector = std::make_shared<SnapshotCollector>();
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->samples_total = 3;
  snapshot->taken = std::chrono::steady_clock::now();
  snapshot->last_complete = snapshot->taken;
  FilesystemSample filesystem;
  filesystem.path = "/data";
  filesystem.mountpoint = "/data";
  filesystem.ok = true;
  filesystem.total_bytes = 1 << 30;
  snapshot->step.sample.filesystems.push_back(filesystem);
  collector->publish(snapshot);
  auto counters = std::make_shared<SinkCounters>();
  collector->set_sinks({{"webhook#1", "https://hooks.example", counters}});
  auto server = HttpServer::start("127.0.0.1:0", collector);
  ASSERT_TRUE(server) << server.error().message;
  const std::string& bound = (*server)->address();
  const int port = std::atoi(bound.c_str() + bound.rfind(':') + 1);

  std::vector<char> buffer(1 << 20);
  // Prometheus keeps its connection from one scrape to the next; curl and urllib do not.
  const int kept = connect_to(port);
  ASSERT_GE(kept, 0);
  for (int i = 0; i < 3; ++i) {  // buffers grow here, in the slots each kind of scrape takes
    ASSERT_GT(scrape(port, buffer), 0U);
    ASSERT_GT(scrape_kept(kept, buffer), 0U);
  }
  allocations = 0;
  counting = true;
  std::size_t shortest = buffer.size();
  for (int i = 0; i < 50; ++i) {
    counters->sent.fetch_add(1);  // a live counter: read at each scrape, not at publish
    shortest = std::min(shortest, i % 2 == 0 ? scrape(port, buffer) : scrape_kept(kept, buffer));
  }
  counting = false;
  ::close(kept);
  EXPECT_EQ(allocations.load(), 0U);

  const std::string_view last(buffer.data(), scrape(port, buffer));
  EXPECT_GT(shortest, 0U);
  EXPECT_TRUE(last.starts_with("HTTP/1.1 200 OK\r\n")) << last;
  EXPECT_NE(last.find("\nheadroom_filesystem_size_bytes{path=\"/data\""), std::string::npos);
  EXPECT_NE(last.find("\nheadroom_alert_sink_sent_total{sink=\"webhook#1\","
                      "target=\"https://hooks.example\"} 50\n"),
            std::string::npos)
      << last;
}

}  // namespace
}  // namespace headroom::daemon
