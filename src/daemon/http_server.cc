#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/kernel/text.h"
#include "core/threads.h"

namespace headroom::daemon {

namespace {

constexpr std::size_t kMaxRequest = 8192;
/// SO_SNDBUF of a client's socket (the kernel doubles it): a page of a few hundred series
/// goes in one call, and a client that pipelines requests and reads nothing holds this much.
constexpr int kSendBuffer = 64 * 1024;
/// How long a client may take to read its response once the request is in.
constexpr std::chrono::seconds kSendTimeout{10};

/// The page at `/`: what this is and where the metrics are, as node_exporter's.
constexpr std::string_view kIndex =
    "<!DOCTYPE html>\n"
    "<html><head><title>headroom watch</title></head>\n"
    "<body><h1>headroom watch</h1>\n"
    "<p>Disks, /dev/shm and memory of this host: time-to-full, alerts.</p>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n"
    "</body></html>\n";

constexpr std::string_view kPlain = "text/plain; charset=utf-8";

/// Writes the head for a body of `length` bytes into the reply; the body parts are the caller's.
/// `Connection: close` unless the reply keeps the connection for the client's next request.
void set_head(HttpReply& reply, std::string_view status, std::string_view type, std::size_t length,
              std::string_view extra = {}) {
  const auto written =
      fmt::format_to_n(reply.head_buffer.data(), reply.head_buffer.size(),
                       "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}{}\r\n", status,
                       type, length, extra, reply.keep_alive ? "" : "Connection: close\r\n");
  reply.parts[0] =
      std::string_view(reply.head_buffer.data(), std::min(written.size, reply.head_buffer.size()));
}

void respond(HttpReply& reply, std::string_view status, std::string_view type,
             std::string_view body, bool head, std::string_view extra = {}) {
  set_head(reply, status, type, body.size(), extra);
  reply.parts[1] = head ? std::string_view() : body;
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

/// Where the first request in `buffer` begins: past empty lines before it, which a server
/// ignores (RFC 9112 2.2).
std::size_t request_start(std::string_view buffer) {
  std::size_t at = 0;
  for (;;) {
    if (buffer.substr(at).starts_with('\n')) {
      at += 1;
    } else if (buffer.substr(at).starts_with("\r\n")) {
      at += 2;
    } else {
      return at;
    }
  }
}

/// The length of the first request in `buffer` up to and with its blank line, or 0 while it
/// has not all arrived. Requests a client sends without waiting for the replies (pipelined)
/// follow it in the buffer.
std::size_t request_length(std::string_view buffer) {
  const std::size_t start = request_start(buffer);
  for (std::size_t at = buffer.find('\n', start); at != std::string_view::npos;
       at = buffer.find('\n', at + 1)) {
    if (at + 1 < buffer.size() && buffer[at + 1] == '\n') return at + 2;
    if (at + 2 < buffer.size() && buffer[at + 1] == '\r' && buffer[at + 2] == '\n') return at + 3;
  }
  return 0;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// What the server reads of a request: its line, and whether the connection may carry the
/// client's next request after it.
struct RequestHead {
  std::string_view method;
  std::string_view target;
  bool keep_alive = false;
};

/// The request line and header fields of one request (the text up to its blank line), or
/// nullopt when it is malformed: a request line that is not METHOD SP TARGET SP HTTP/x, a
/// field line without a colon or with space in or after its name, a folded line, a bare CR.
/// Such a request would be read otherwise by a proxy in front (RFC 9112 5.1: answer 400).
/// The connection is kept for HTTP/1.1 without `Connection: close` and without a body (a
/// GET or HEAD has none; the bytes of one would be read as the next request).
std::optional<RequestHead> parse_head(std::string_view request) {
  request.remove_prefix(request_start(request));
  RequestHead head;
  bool keep_alive = true;
  for (std::size_t number = 0; !request.empty(); ++number) {
    const std::size_t end = request.find('\n');
    std::string_view line = request.substr(0, end);
    request.remove_prefix(end == std::string_view::npos ? request.size() : end + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return std::nullopt;
    if (number == 0) {
      const std::size_t first = line.find(' ');
      const std::size_t second =
          first == std::string_view::npos ? first : line.find(' ', first + 1);
      if (second == std::string_view::npos || first == 0 || second == first + 1)
        return std::nullopt;
      const std::string_view version = line.substr(second + 1);
      if (!version.starts_with("HTTP/") || version.find(' ') != std::string_view::npos) {
        return std::nullopt;
      }
      head.method = line.substr(0, first);
      head.target = line.substr(first + 1, second - first - 1);
      keep_alive = version == "HTTP/1.1";
      continue;
    }
    if (line.empty()) break;  // the blank line
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        line.substr(0, colon).find_first_of(" \t") != std::string_view::npos) {
      return std::nullopt;  // also a folded line, which starts with a space
    }
    const std::string_view name = line.substr(0, colon);
    std::string_view value = trim_blanks(line.substr(colon + 1));
    if (equals_ignoring_case(name, "content-length")) {
      if (value.find_first_not_of('0') != std::string_view::npos) keep_alive = false;
    } else if (equals_ignoring_case(name, "transfer-encoding")) {
      keep_alive = false;
    } else if (equals_ignoring_case(name, "connection")) {
      while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (equals_ignoring_case(trim_blanks(value.substr(0, comma)), "close")) keep_alive = false;
        value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
      }
    }
  }
  if (head.method.empty()) return std::nullopt;  // no request line at all
  head.keep_alive = keep_alive;
  return head;
}

/// One client connection: reading a request, then sending the reply; kept open for the
/// next request when the reply says so (Prometheus scrapes over one connection).
struct Connection {
  int fd = -1;
  bool sending = false;
  bool served = false;       ///< has had a reply: idle between requests, it may be let go
  bool polling_out = false;  ///< waits for the socket to take more of the reply
  bool closing = false;      ///< the last reply is sent: waits for the client to close
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point last_reply;
  std::string request;        ///< keeps its capacity from one connection to the next
  std::size_t answering = 0;  ///< length of the request at the front that the reply answers
  HttpReply reply;
  std::size_t sent = 0;
};

}  // namespace

void prepare_reply(std::string_view request, const SnapshotCollector& collector, HttpReply& reply) {
  reply.page.reset();
  reply.tail.clear();
  reply.parts = {};
  reply.keep_alive = false;
  const std::optional<RequestHead> parsed = parse_head(request);
  if (!parsed) return respond(reply, "400 Bad Request", kPlain, "bad request\n", false);
  const std::string_view method = parsed->method;
  const std::string_view target = parsed->target.substr(0, parsed->target.find('?'));
  const bool head = method == "HEAD";
  reply.keep_alive = (head || method == "GET") && parsed->keep_alive;
  if (method != "GET" && !head) {
    return respond(reply, "405 Method Not Allowed", kPlain, "only GET and HEAD\n", false,
                   "Allow: GET, HEAD\r\n");
  }
  if (target == "/metrics") {
    reply.page = collector.page(std::chrono::steady_clock::now(), reply.tail);
    const std::string_view body = reply.page ? std::string_view(*reply.page) : std::string_view();
    set_head(reply, "200 OK", "text/plain; version=0.0.4; charset=utf-8",
             body.size() + reply.tail.size());
    if (!head) {
      reply.parts[1] = body;
      reply.parts[2] = reply.tail;
    }
    return;
  }
  if (target == "/") return respond(reply, "200 OK", "text/html; charset=utf-8", kIndex, head);
  respond(reply, "404 Not Found", kPlain, "not found: the metrics are at /metrics\n", head);
}

std::string http_response(std::string_view request, const SnapshotCollector& collector) {
  HttpReply reply;
  prepare_reply(request, collector, reply);
  std::string out;
  for (const std::string_view part : reply.parts) out += part;
  return out;
}

struct HttpServer::State {
  int listener = -1;
  int stop = -1;  ///< an eventfd: readable once the server stops
  int epoll = -1;
  std::string address;
  std::shared_ptr<SnapshotCollector> collector;
  HttpOptions options;
  std::vector<Connection> connections;
  std::size_t open = 0;
  bool accepting = true;
  /// After accept failed for lack of file descriptors or memory: when to try again.
  std::optional<std::chrono::steady_clock::time_point> paused_until;
  std::thread thread;

  static constexpr std::uint64_t kListener = ~std::uint64_t{0};
  static constexpr std::uint64_t kStop = kListener - 1;

  void watch_listener(bool on) {
    if (on == accepting) return;
    epoll_event event{};
    event.events = on ? static_cast<std::uint32_t>(EPOLLIN) : 0U;
    event.data.u64 = kListener;
    ::epoll_ctl(epoll, EPOLL_CTL_MOD, listener, &event);
    accepting = on;
  }

  void close_connection(Connection& connection) {
    ::close(connection.fd);  // leaves the epoll set with it
    connection.fd = -1;
    connection.sending = false;
    connection.served = false;
    connection.closing = false;
    connection.polling_out = false;
    connection.request.clear();
    connection.answering = 0;
    connection.reply.page.reset();
    connection.sent = 0;
    --open;
    if (!paused_until) watch_listener(true);
  }

  void poll_for(Connection& connection, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = static_cast<std::uint64_t>(&connection - connections.data());
    ::epoll_ctl(epoll, EPOLL_CTL_MOD, connection.fd, &event);
    connection.polling_out = events == EPOLLOUT;
  }

  /// Ends a connection whose last reply has all gone to the socket. Input the client sent
  /// past its last request would make close() answer with a reset, which throws away the
  /// reply still on its way to the client; so when there is any, the server half-closes and
  /// reads until the client closes too, or for the request timeout at most.
  void end_after_reply(Connection& connection) {
    char byte;
    const bool more = connection.request.size() > connection.answering ||
                      ::recv(connection.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
    if (!more) return close_connection(connection);
    ::shutdown(connection.fd, SHUT_WR);
    connection.closing = true;
    connection.sending = false;
    connection.request.clear();
    connection.reply.page.reset();
    connection.deadline = std::chrono::steady_clock::now() + options.request_timeout;
    if (connection.polling_out) poll_for(connection, EPOLLIN);
    drain(connection);
  }

  /// Reads and drops what a closing connection's client sends, until it closes.
  void drain(Connection& connection) {
    char buffer[2048];
    for (;;) {
      const ssize_t got = ::recv(connection.fd, buffer, sizeof buffer, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (got <= 0) return close_connection(connection);
    }
  }

  /// Sends what the socket takes. True when the whole reply went and the connection now
  /// waits for the client's next request; false when it waits for the socket to take more,
  /// or is ending (all sent without keep-alive, or an error).
  bool send_reply(Connection& connection) {
    const std::size_t total = connection.reply.size();
    while (connection.sent < total) {
      std::array<iovec, 3> vectors{};
      std::size_t count = 0;
      std::size_t skip = connection.sent;
      for (const std::string_view part : connection.reply.parts) {
        if (skip >= part.size()) {
          skip -= part.size();
          continue;
        }
        vectors[count++] = {const_cast<char*>(part.data() + skip), part.size() - skip};
        skip = 0;
      }
      msghdr message{};
      message.msg_iov = vectors.data();
      message.msg_iovlen = count;
      const ssize_t sent = ::sendmsg(connection.fd, &message, MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!connection.polling_out) poll_for(connection, EPOLLOUT);
        return false;
      }
      if (sent <= 0) break;
      connection.sent += static_cast<std::size_t>(sent);
    }
    if (connection.sent < total) {
      close_connection(connection);
      return false;
    }
    if (!connection.reply.keep_alive) {
      end_after_reply(connection);
      return false;
    }
    connection.request.erase(0, std::exchange(connection.answering, 0));
    connection.sending = false;
    connection.sent = 0;
    connection.reply.page.reset();
    connection.served = true;
    connection.last_reply = std::chrono::steady_clock::now();
    if (connection.polling_out) poll_for(connection, EPOLLIN);
    // A client waiting in the backlog may now take this connection's slot.
    if (!paused_until) watch_listener(true);
    return true;
  }

  /// Replies to each whole request the connection has in its buffer, in order, until one
  /// waits for the socket or the buffer holds none: then the connection waits for more.
  void serve_requests(Connection& connection) {
    for (;;) {
      const std::size_t length = request_length(connection.request);
      const auto now = std::chrono::steady_clock::now();
      if (length == 0) {
        connection.deadline =
            now + (connection.request.empty() ? options.idle_timeout : options.request_timeout);
        return;
      }
      connection.answering = length;
      prepare_reply(std::string_view(connection.request).substr(0, length), *collector,
                    connection.reply);
      connection.sending = true;
      connection.deadline = now + kSendTimeout;
      if (!send_reply(connection)) return;
    }
  }

  /// Reads what has arrived of the request; once it is whole, replies.
  void read_request(Connection& connection) {
    char buffer[2048];
    for (;;) {
      const std::size_t length = request_length(connection.request);
      if (length > kMaxRequest || (length == 0 && connection.request.size() > kMaxRequest)) {
        return close_connection(connection);
      }
      if (length > 0) break;
      // At most one byte past the limit: a request of more is dropped, whatever arrives.
      const std::size_t room = std::min(sizeof buffer, kMaxRequest + 1 - connection.request.size());
      const ssize_t got = ::recv(connection.fd, buffer, room, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // wait for more
      if (got <= 0) return close_connection(connection);
      if (connection.served && connection.request.empty()) {
        // The next request has begun: it has the request timeout to arrive whole.
        connection.deadline = std::chrono::steady_clock::now() + options.request_timeout;
      }
      connection.request.append(buffer, static_cast<std::size_t>(got));
    }
    serve_requests(connection);
  }

  /// The connection to close for a new client when every slot (or every file descriptor) is
  /// taken: one ending, else the one whose last reply is oldest among those that have had a
  /// reply and now wait on their client (for a next request, whole or not, or to read more
  /// of a reply). nullptr when none does: a client on its first request keeps its slot for
  /// the request or send timeout. So a client that holds connections by trickling requests
  /// down them, or by reading slowly, cannot keep a newcomer out.
  Connection* to_let_go() {
    Connection* chosen = nullptr;
    for (Connection& connection : connections) {
      if (connection.fd < 0) continue;
      if (connection.closing) return &connection;
      if (!connection.served || (connection.sending && !connection.polling_out)) continue;
      if (chosen == nullptr || connection.last_reply < chosen->last_reply) chosen = &connection;
    }
    return chosen;
  }

  void accept_clients() {
    for (;;) {
      Connection* spare = open < connections.size() ? nullptr : to_let_go();
      if (open == connections.size() && spare == nullptr) {
        watch_listener(false);  // every slot busy: the next client waits in the backlog
        return;
      }
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of file descriptors: a connection that waits on its client makes room.
          if (Connection* other = to_let_go()) {
            close_connection(*other);
            continue;
          }
          // The connection waits in the backlog; retry in a moment, not in a busy loop.
          paused_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
          watch_listener(false);
        }
        return;
      }
      // A client is here and every slot is taken: make room (a client must expect a kept
      // connection to close; Prometheus opens a new one).
      if (spare != nullptr) close_connection(*spare);
      // The reply is sent from the page as the client takes it; a fixed send buffer keeps a
      // client that asks and never reads from holding megabytes of the kernel's memory.
      const int send_buffer = kSendBuffer;
      ::setsockopt(client, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
      const auto slot = std::find_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.fd < 0; });
      Connection& connection = *slot;
      connection.fd = client;
      connection.deadline = std::chrono::steady_clock::now() + options.request_timeout;
      ++open;
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = static_cast<std::uint64_t>(slot - connections.begin());
      if (::epoll_ctl(epoll, EPOLL_CTL_ADD, client, &event) != 0) {
        close_connection(connection);
        continue;
      }
      read_request(connection);  // the request has usually arrived with the connection
    }
  }

  /// Closes the connections past their deadline; the milliseconds until the next one
  /// (-1: none, sleep until a client comes).
  int expire(std::chrono::steady_clock::time_point now) {
    if (paused_until && *paused_until <= now) {
      paused_until.reset();
      watch_listener(true);
    }
    auto next = paused_until.value_or(std::chrono::steady_clock::time_point::max());
    for (Connection& connection : connections) {
      if (connection.fd < 0) continue;
      if (connection.deadline <= now) {
        close_connection(connection);
      } else {
        next = std::min(next, connection.deadline);
      }
    }
    if (next == std::chrono::steady_clock::time_point::max()) return -1;
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count());
  }

  void serve() {
    std::array<epoll_event, 16> events{};
    for (;;) {
      const int timeout =
          open == 0 && !paused_until ? -1 : expire(std::chrono::steady_clock::now());
      const int ready = ::epoll_wait(epoll, events.data(), events.size(), timeout);
      if (ready < 0) {
        if (errno == EINTR) continue;
        return;
      }
      for (int i = 0; i < ready; ++i) {
        const std::uint64_t key = events[static_cast<std::size_t>(i)].data.u64;
        if (key == kStop) return;
        if (key == kListener) {
          accept_clients();
          continue;
        }
        Connection& connection = connections[key];
        if (connection.fd < 0) continue;  // closed earlier in this batch
        if (connection.closing) {
          drain(connection);
        } else if (connection.sending) {
          if (send_reply(connection)) serve_requests(connection);
        } else {
          read_request(connection);
        }
      }
    }
  }

  ~State() {
    if (thread.joinable()) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t written = ::write(stop, &one, sizeof one);
      thread.join();
    }
    for (Connection& connection : connections) {
      if (connection.fd >= 0) ::close(connection.fd);
    }
    for (const int fd : {listener, stop, epoll}) {
      if (fd >= 0) ::close(fd);
    }
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
  state->connections.resize(static_cast<std::size_t>(std::max(1, options.max_connections)));
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
  state->epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (state->epoll < 0) return fail(Error::from_errno(errno, "epoll_create1"));
  for (const auto& [fd, key] :
       {std::pair{state->listener, State::kListener}, std::pair{state->stop, State::kStop}}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = key;
    if (::epoll_ctl(state->epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
      return fail(Error::from_errno(errno, "epoll_ctl"));
    }
  }
  auto thread = try_start_thread([raw = state.get()] { raw->serve(); });
  if (!thread) {
    return fail(Error{Error::Code::kIo, fmt::format("cannot serve {}: no thread to serve it on "
                                                    "(a task limit: ulimit -u, pids.max)",
                                                    address)});
  }
  state->thread = std::move(*thread);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
}

}  // namespace headroom::daemon
