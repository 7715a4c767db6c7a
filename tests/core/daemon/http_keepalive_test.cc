// The exporter's connections as Prometheus uses them: one connection per target,
// kept from one scrape to the next (daemon/http_server.h). Real sockets on the
// loopback; a reply that never comes fails the test after 10 s instead of hanging it.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/http_server.h"

namespace headroom::daemon {
namespace {

struct Served {
  std::shared_ptr<SnapshotCollector> collector = std::make_shared<SnapshotCollector>();
  std::unique_ptr<HttpServer> server;
  int port = 0;

  explicit Served(HttpOptions options = {}) {
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->samples_total = 7;
    snapshot->taken = std::chrono::steady_clock::now();
    collector->publish(snapshot);
    auto started = HttpServer::start("127.0.0.1:0", collector, options);
    EXPECT_TRUE(started) << started.error().message;
    if (!started) return;
    server = std::move(*started);
    const std::string& bound = server->address();
    port = std::atoi(bound.c_str() + bound.rfind(':') + 1);
  }
};

/// A client socket connected to `port`; reads give up after 10 s. A `receive_buffer` (bytes)
/// is set before connecting, so the window the client offers is that small from the start.
int connect_to(int port, int receive_buffer = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval patience{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  if (receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  return fd;
}

void send_all(int fd, std::string_view text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

struct Response {
  std::string head;
  std::string body;
};

/// Reads one response (head, then a body of its Content-Length unless it answers a HEAD)
/// from `fd`, keeping what follows it in `pending`; nullopt when the connection ends (or
/// times out) first.
std::optional<Response> read_response(int fd, std::string& pending, bool to_head = false) {
  auto fill = [&] {
    char buffer[4096];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) return false;
    pending.append(buffer, static_cast<std::size_t>(got));
    return true;
  };
  std::size_t blank;
  while ((blank = pending.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return std::nullopt;
  }
  Response response{pending.substr(0, blank + 4), {}};
  const std::size_t field = response.head.find("Content-Length: ");
  if (field == std::string::npos) return std::nullopt;
  const std::size_t length = to_head ? 0 : std::stoul(response.head.substr(field + 16));
  while (pending.size() < blank + 4 + length) {
    if (!fill()) return std::nullopt;
  }
  response.body = pending.substr(blank + 4, length);
  pending.erase(0, blank + 4 + length);
  return response;
}

/// Whether the server has closed `fd` (reads its end of stream within 10 s).
bool closed_by_server(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, 0) == 0;
}

/// A connection that has sent `requests` and had the reply to the first.
int served_connection(int port, std::string_view requests, std::string& pending) {
  const int fd = connect_to(port);
  send_all(fd, requests);
  EXPECT_TRUE(read_response(fd, pending)) << requests;
  return fd;
}

std::string status_line(const Response& response) {
  return response.head.substr(0, response.head.find("\r\n"));
}

TEST(HttpKeepAlive, ScrapesFollowEachOtherOnOneConnection) {
  Served served;
  const int fd = connect_to(served.port);
  std::string pending;
  for (int scrape = 0; scrape < 3; ++scrape) {
    send_all(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    const auto response = read_response(fd, pending);
    ASSERT_TRUE(response) << "scrape " << scrape << ": the connection ended";
    EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
    EXPECT_EQ(response->head.find("Connection: close"), std::string::npos) << response->head;
    EXPECT_NE(response->body.find("headroom_samples_total 7\n"), std::string::npos);
  }
  ::close(fd);
}

TEST(HttpKeepAlive, RequestsSentAtOnceAreAnsweredInOrder) {
  Served served;
  const int fd = connect_to(served.port);
  // Bare newlines are taken as well as CRLF; a HEAD has no body.
  send_all(fd,
           "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
           "HEAD /metrics HTTP/1.1\nHost: x\n\n"
           "GET /nothing HTTP/1.1\r\n\r\n"
           "GET /metrics HTTP/1.1\r\nConnection: Keep-Alive, Close\r\n\r\n"
           "GET / HTTP/1.1\r\n\r\n");
  std::string pending;
  const auto index = read_response(fd, pending);
  const auto head = read_response(fd, pending, true);
  const auto missing = read_response(fd, pending);
  const auto last = read_response(fd, pending);
  ASSERT_TRUE(index && head && missing && last);
  EXPECT_NE(index->body.find("<a href=\"/metrics\">"), std::string::npos);
  EXPECT_EQ(status_line(*head), "HTTP/1.1 200 OK");
  EXPECT_NE(head->head.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(status_line(*missing), "HTTP/1.1 404 Not Found");
  EXPECT_NE(last->body.find("headroom_samples_total 7\n"), std::string::npos);
  // The fourth asked to close: the fifth is never answered.
  EXPECT_NE(last->head.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(pending.empty());
  EXPECT_TRUE(closed_by_server(fd));
  ::close(fd);
}

TEST(HttpKeepAlive, ClosesWhenTheRequestCannotBeFollowed) {
  Served served;
  for (const std::string_view request :
       {"GET /metrics HTTP/1.0\r\n\r\n", "GET /metrics HTTP/1.1\r\nconnection: close\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nGET ",
        "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /metrics HTTP/1.1\r\n\r\n", "BREW /pot HTCPCP/1.0\r\n\r\n"}) {
    const int fd = connect_to(served.port);
    send_all(fd, request);
    std::string pending;
    const auto response = read_response(fd, pending);
    ASSERT_TRUE(response) << request;
    EXPECT_NE(response->head.find("Connection: close\r\n"), std::string::npos) << request;
    EXPECT_TRUE(closed_by_server(fd)) << request;
    ::close(fd);
  }
}

TEST(HttpKeepAlive, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  HttpOptions options;
  options.idle_timeout = std::chrono::milliseconds(100);
  Served served(options);
  const int fd = connect_to(served.port);
  send_all(fd, "GET /metrics HTTP/1.1\r\n\r\n");
  std::string pending;
  ASSERT_TRUE(read_response(fd, pending));
  EXPECT_TRUE(closed_by_server(fd));
  ::close(fd);
}

// A client that keeps a connection without asking more does not shut out others: when
// every slot is taken, the connection idle longest is closed for the newcomer. One that
// has not finished its request is not.
TEST(HttpKeepAlive, IdleConnectionsMakeRoomForNewClients) {
  HttpOptions options;
  options.max_connections = 3;
  Served served(options);
  std::string pending[4];
  const int oldest = served_connection(served.port, "GET /metrics HTTP/1.1\r\n\r\n", pending[0]);
  const int newer = served_connection(served.port, "GET /metrics HTTP/1.1\r\n\r\n", pending[1]);
  const int halfway = connect_to(served.port);
  send_all(halfway, "GET /metrics HTTP/1.1\r\n");  // its blank line is still to come

  const int newcomer = connect_to(served.port);
  send_all(newcomer, "GET / HTTP/1.1\r\n\r\n");
  const auto answer = read_response(newcomer, pending[3]);
  ASSERT_TRUE(answer) << "the new client was not served";
  EXPECT_EQ(status_line(*answer), "HTTP/1.1 200 OK");
  EXPECT_TRUE(closed_by_server(oldest));
  // The newer idle one and the one halfway through its request are still served.
  send_all(newer, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(read_response(newer, pending[1]));
  send_all(halfway, "\r\n");
  EXPECT_TRUE(read_response(halfway, pending[2]));
  for (const int fd : {oldest, newer, halfway, newcomer}) ::close(fd);
}

// Connections that scrape once and then trickle their next request down, or pipeline
// requests and read slowly, would hold every slot for as long as they liked: a connection
// that has had a reply and waits on its client makes room for a newcomer, oldest first.
TEST(HttpKeepAlive, ClientsThatTrickleRequestsCannotHoldEverySlot) {
  HttpOptions options;
  options.max_connections = 2;
  Served served(options);
  std::string pending[3];
  constexpr std::string_view kOneAndAHalf = "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n";
  const int first = served_connection(served.port, kOneAndAHalf, pending[0]);
  const int second = served_connection(served.port, kOneAndAHalf, pending[1]);

  const int newcomer = connect_to(served.port);
  send_all(newcomer, "GET /metrics HTTP/1.1\r\n\r\n");
  const auto answer = read_response(newcomer, pending[2]);
  ASSERT_TRUE(answer) << "the new client was kept out";
  EXPECT_NE(answer->body.find("headroom_samples_total 7\n"), std::string::npos);
  EXPECT_TRUE(closed_by_server(first));  // its last reply was the oldest
  send_all(second, "\r\n");              // the other one finishes its request: served
  EXPECT_TRUE(read_response(second, pending[1]));
  for (const int fd : {first, second, newcomer}) ::close(fd);
}

// Out of file descriptors, a kept connection idle between scrapes makes room as it does
// when every slot is taken. The test's own client sockets count against the same limit.
TEST(HttpKeepAlive, OutOfFileDescriptorsAnIdleConnectionMakesRoom) {
  Served served;
  std::string pending[2];
  const int idle = served_connection(served.port, "GET / HTTP/1.1\r\n\r\n", pending[0]);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  // RLIMIT_NOFILE bounds fd numbers, and the numbers in use may have holes (a test runner
  // passes some): the limit goes just past the highest, every free number below it is
  // taken by a placeholder, and one is given back, for the newcomer's client socket.
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
  }
  rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(highest) + 2;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::vector<int> placeholders;
  for (int fd; (fd = ::dup(0)) >= 0;) placeholders.push_back(fd);
  ASSERT_FALSE(placeholders.empty());
  ::close(placeholders.back());
  placeholders.pop_back();
  const int newcomer = connect_to(served.port);
  ASSERT_GE(newcomer, 0);
  send_all(newcomer, "GET / HTTP/1.1\r\n\r\n");
  const auto answer = read_response(newcomer, pending[1]);
  for (const int fd : placeholders) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_TRUE(answer) << "the server could not take the new client";
  EXPECT_EQ(status_line(*answer), "HTTP/1.1 200 OK");
  EXPECT_TRUE(closed_by_server(idle));
  for (const int fd : {idle, newcomer}) ::close(fd);
}

TEST(HttpKeepAlive, ARequestOfMoreThan8KiBIsDropped) {
  Served served;
  const std::string start = "GET / HTTP/1.1\r\nX-Pad: ";
  for (const std::size_t size : {std::size_t{8192}, std::size_t{8193}}) {
    const int fd = connect_to(served.port);
    send_all(fd, start + std::string(size - start.size() - 4, 'a') + "\r\n\r\n");
    std::string pending;
    EXPECT_EQ(read_response(fd, pending).has_value(), size == 8192) << size;
    ::close(fd);
  }
}

/// A page of about `series` filesystems: larger than a small receive buffer.
std::shared_ptr<Snapshot> big_snapshot(int series) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->taken = std::chrono::steady_clock::now();
  for (int i = 0; i < series; ++i) {
    FilesystemSample filesystem;
    filesystem.path = "/data/run" + std::to_string(i);
    filesystem.mountpoint = "/data";
    filesystem.ok = true;
    filesystem.total_bytes = 1 << 30;
    snapshot->step.sample.filesystems.push_back(filesystem);
  }
  return snapshot;
}

// A client that sends more after a request that closes the connection still gets the whole
// reply: closing with its bytes unread would send a reset, which throws the reply away.
TEST(HttpKeepAlive, AClosingReplyIsNotCutShortByInputLeftUnread) {
  Served served;
  served.collector->publish(big_snapshot(4000));  // a page of over 1 MB
  const int client = connect_to(served.port);
  send_all(client, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n" + std::string(3000, 'x'));
  std::string pending;
  const auto response = read_response(client, pending);
  ASSERT_TRUE(response) << "the reply was cut short";
  EXPECT_GT(response->body.size(), 1'000'000U);
  EXPECT_NE(response->body.find("/data/run3999"), std::string::npos);
  ::close(client);
}

/// Bytes the server has not had acknowledged on its side of the connection from
/// `client_port` (tx_queue of /proc/net/tcp), or -1 when it is not there.
long server_send_queue(int server_port, int client_port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    fields >> slot >> local >> remote >> state >> queues;
    if (std::stoi(local.substr(local.find(':') + 1), nullptr, 16) == server_port &&
        std::stoi(remote.substr(remote.find(':') + 1), nullptr, 16) == client_port) {
      return std::stol(queues.substr(0, queues.find(':')), nullptr, 16);
    }
  }
  return -1;
}

// A client that pipelines thousands of scrapes and reads nothing holds the server's send
// buffer (64 KiB, 128 KiB as the kernel doubles it), not the megabytes an auto-tuned one
// grows to.
TEST(HttpKeepAlive, AClientThatAsksAndNeverReadsHoldsABoundedSendBuffer) {
  Served served;
  served.collector->publish(big_snapshot(40));
  const int client = connect_to(served.port, 4096);
  sockaddr_in mine{};
  socklen_t length = sizeof mine;
  ::getsockname(client, reinterpret_cast<sockaddr*>(&mine), &length);
  std::string requests;
  for (int i = 0; i < 2000; ++i) requests += "GET /metrics HTTP/1.1\r\n\r\n";
  ::send(client, requests.data(), requests.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long queued = server_send_queue(served.port, ntohs(mine.sin_port));
  EXPECT_GT(queued, 0);
  EXPECT_LE(queued, 256 * 1024);
  ::close(client);
}

}  // namespace
}  // namespace headroom::daemon
