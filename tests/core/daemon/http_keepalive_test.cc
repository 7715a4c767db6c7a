// The exporter's connections as Prometheus uses them: one connection per target,
// kept from one scrape to the next (daemon/http_server.h). Real sockets on the
// loopback; a reply that never comes fails the test after 10 s instead of hanging it.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

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

/// A client socket connected to `port`; reads give up after 10 s.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval patience{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
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
  const int oldest = connect_to(served.port);
  send_all(oldest, "GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(read_response(oldest, pending[0]));
  const int newer = connect_to(served.port);
  send_all(newer, "GET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(read_response(newer, pending[1]));
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

}  // namespace
}  // namespace headroom::daemon
