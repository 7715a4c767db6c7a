#pragma once
// The HTTP side of `headroom watch --listen`: GET /metrics (the Prometheus text
// format of the collector) and GET / (a small page linking it, as every
// exporter has), over IPv4 or IPv6. Not prometheus-cpp's Exposer: Debian
// builds its civetweb without IPv6, and this is all an exporter needs.
//
// One thread and one epoll set serve every connection, each non-blocking. Idle,
// the thread sleeps in epoll_wait: it wakes only for a client (bench/RESULTS-watch.md).
// An HTTP/1.1 connection stays open for the client's next request, as Prometheus
// scrapes (one connection per target, kept between scrapes), unless the request
// says `Connection: close` or has a body; requests sent without waiting for the
// replies are answered in order. A request that has not arrived within the request
// timeout, or is larger than 8 KiB, is dropped, and a response not taken within
// 10 s is given up, so idle or slow clients (a port scanner, half-open connections)
// hold one of `max_connections` slots for that long at most; the others are served
// meanwhile. A connection idle between requests is closed after the idle timeout.
// When a new client finds every slot (or every file descriptor) taken, a connection
// that has had a reply and now waits on its client (idle, trickling its next
// request, or reading slowly) is closed for it, the one whose last reply is oldest:
// kept connections cannot shut a newcomer out. A request line or field the RFC
// calls malformed gets 400. Each client socket has a fixed 64 KiB send buffer, and
// a connection that ends with input unread is half-closed and drained, so the reset
// close() would send does not cut the reply short.
//
// A scrape allocates nothing in steady state: the page is the text the collector
// rendered at the last sample, sent from the collector's buffer, and the few
// scrape-time lines (ages, sink counters) go to a buffer each slot keeps.

#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "core/error.h"
#include "daemon/metrics.h"

namespace headroom::daemon {

struct HttpOptions {
  int max_connections = 64;
  std::chrono::milliseconds request_timeout{2000};
  /// How long a connection may wait for its next request (Prometheus keeps its own
  /// idle connections 5 minutes; a scrape interval is at most a few).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
};

class HttpServer {
 public:
  /// Binds `address` ("127.0.0.1:9840", "[::1]:9840", "[::]:0": parse_listen_address's
  /// form) and starts serving `collector`. Fails when the address cannot be bound.
  [[nodiscard]] static Result<std::unique_ptr<HttpServer>> start(
      const std::string& address, std::shared_ptr<SnapshotCollector> collector,
      HttpOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The address bound, with the port the kernel picked for port 0: "[::1]:40693".
  [[nodiscard]] const std::string& address() const;

  struct State;

 private:
  explicit HttpServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// One response, in up to three parts sent as they are: the head (status line and
/// headers), the body, and for /metrics the scrape-time lines. Reused from one
/// request to the next, it keeps its buffers: a reply allocates nothing once they
/// have grown to the page's size.
struct HttpReply {
  std::array<char, 256> head_buffer{};
  std::shared_ptr<const std::string> page;  ///< keeps the body of /metrics alive
  std::string tail;                         ///< scrape-time lines of /metrics
  std::array<std::string_view, 3> parts;    ///< head, body, tail
  bool keep_alive = false;  ///< the connection stays open for the client's next request

  [[nodiscard]] std::size_t size() const {
    return parts[0].size() + parts[1].size() + parts[2].size();
  }
};

/// Fills `reply` with the response to one request (the text up to and excluding the
/// blank line).
void prepare_reply(std::string_view request, const SnapshotCollector& collector, HttpReply& reply);

/// The response to one request as one string: status line, headers and body, as
/// sent. Pure, for tests.
[[nodiscard]] std::string http_response(std::string_view request,
                                        const SnapshotCollector& collector);

}  // namespace headroom::daemon
