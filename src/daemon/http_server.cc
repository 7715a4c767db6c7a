#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/threads.h"

namespace headroom::daemon {

namespace {

constexpr std::size_t kMaxRequest = 8192;

/// The page at `/`: what this is and where the metrics are, as node_exporter's.
constexpr std::string_view kIndex =
    "<!DOCTYPE html>\n"
    "<html><head><title>headroom watch</title></head>\n"
    "<body><h1>headroom watch</h1>\n"
    "<p>Disks, /dev/shm and memory of this host: time-to-full, alerts.</p>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n"
    "</body></html>\n";

std::string respond(std::string_view status, std::string_view type, std::string_view body,
                    bool head, std::string_view extra = {}) {
  std::string out = fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
      status, type, body.size(), extra);
  if (!head) out += body;
  return out;
}

struct Sockaddr {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

/// "127.0.0.1:9840" or "[::1]:9840" (parse_listen_address's form) as a sockaddr.
Result<Sockaddr> to_sockaddr(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) return fail(Error::invalid("'" + address + "' has no port"));
  std::string host = address.substr(0, colon);
  const int port = std::atoi(address.c_str() + colon + 1);
  Sockaddr out;
  if (host.starts_with('[')) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<std::uint16_t>(port));
    host = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) {
      return fail(Error::invalid("'" + address + "': not an IPv6 address"));
    }
    out.length = sizeof(sockaddr_in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&out.storage);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) != 1) {
      return fail(Error::invalid("'" + address + "': not an IPv4 address"));
    }
    out.length = sizeof(sockaddr_in);
  }
  return out;
}

/// Reads one request head (up to the blank line) within `timeout`; empty when the
/// client sent none in time, closed early or sent more than kMaxRequest.
std::string read_request(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || request.size() > kMaxRequest) return {};
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) return {};
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return {};
    request.append(buffer, static_cast<std::size_t>(got));
  }
  return request;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(sent));
  }
}

}  // namespace

std::string http_response(std::string_view request, const SnapshotCollector& collector) {
  const std::size_t line_end = request.find_first_of("\r\n");
  const std::string_view line = request.substr(0, line_end);
  const std::size_t first = line.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || !line.substr(second + 1).starts_with("HTTP/")) {
    return respond("400 Bad Request", "text/plain; charset=utf-8", "bad request\n", false);
  }
  const std::string_view method = line.substr(0, first);
  std::string_view target = line.substr(first + 1, second - first - 1);
  target = target.substr(0, target.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return respond("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET and HEAD\n",
                   false, "Allow: GET, HEAD\r\n");
  }
  if (target == "/metrics") {
    const std::string body = prometheus::TextSerializer().Serialize(collector.Collect());
    return respond("200 OK", "text/plain; version=0.0.4; charset=utf-8", body, head);
  }
  if (target == "/") return respond("200 OK", "text/html; charset=utf-8", kIndex, head);
  return respond("404 Not Found", "text/plain; charset=utf-8",
                 "not found: the metrics are at /metrics\n", head);
}

struct HttpServer::State {
  int listener = -1;
  int stop = -1;  ///< an eventfd: readable once the server stops
  std::string address;
  std::shared_ptr<SnapshotCollector> collector;
  HttpOptions options;
  std::vector<std::thread> threads;

  void serve() {
    for (;;) {
      pollfd ready[2] = {{listener, POLLIN, 0}, {stop, POLLIN, 0}};
      if (::poll(ready, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if ((ready[1].revents & POLLIN) != 0) return;
      // Non-blocking: another thread may have taken this connection.
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const timeval send_timeout{10, 0};
      ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
      const std::string request = read_request(client, options.request_timeout);
      if (!request.empty()) send_all(client, http_response(request, *collector));
      ::close(client);
    }
  }

  ~State() {
    if (stop >= 0) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t written = ::write(stop, &one, sizeof one);
    }
    for (std::thread& thread : threads) thread.join();
    if (listener >= 0) ::close(listener);
    if (stop >= 0) ::close(stop);
  }
};

HttpServer::HttpServer(std::unique_ptr<State> state) : state_(std::move(state)) {}
HttpServer::~HttpServer() = default;

const std::string& HttpServer::address() const { return state_->address; }

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& address,
                                                      std::shared_ptr<SnapshotCollector> collector,
                                                      HttpOptions options) {
  auto sockaddr = to_sockaddr(address);
  if (!sockaddr) return fail(sockaddr.error());
  auto state = std::make_unique<State>();
  state->collector = std::move(collector);
  state->options = options;
  const int family = sockaddr->storage.ss_family;
  state->listener = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (state->listener < 0) return fail(Error::from_errno(errno, address));
  const int on = 1;
  ::setsockopt(state->listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (family == AF_INET6) {
    // [::] takes IPv4 too (as Go's exporters do); [::1] and others only themselves.
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sockaddr->storage);
    const int v6only = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) ? 0 : 1;
    ::setsockopt(state->listener, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(state->listener, reinterpret_cast<const ::sockaddr*>(&sockaddr->storage),
             sockaddr->length) != 0 ||
      ::listen(state->listener, 64) != 0) {
    return fail(
        Error::invalid(fmt::format("cannot listen on {}: {}", address, std::strerror(errno))));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(state->listener, reinterpret_cast<::sockaddr*>(&bound), &length);
  const int port = family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  state->address = fmt::format("{}:{}", address.substr(0, address.rfind(':')), port);
  state->stop = ::eventfd(0, EFD_CLOEXEC);
  if (state->stop < 0) return fail(Error::from_errno(errno, "eventfd"));
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    auto thread = try_start_thread([raw = state.get()] { raw->serve(); });
    if (!thread) break;  // a task limit: fewer threads serve the same socket
    state->threads.push_back(std::move(*thread));
  }
  auto server = std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
  if (server->state_->threads.empty()) {
    return fail(Error{Error::Code::kIo, fmt::format("cannot serve {}: no thread to serve it on "
                                                    "(a task limit: ulimit -u, pids.max)",
                                                    address)});
  }
  return server;
}

}  // namespace headroom::daemon
