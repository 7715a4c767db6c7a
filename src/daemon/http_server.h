#pragma once
// The HTTP side of `headroom watch --listen`: GET /metrics (the Prometheus text
// format of the collector) and GET / (a small page linking it, as every
// exporter has), over IPv4 or IPv6. Not prometheus-cpp's Exposer: Debian
// builds its civetweb without IPv6, and this is all an exporter needs.
//
// A fixed pool of threads, each serving one connection at a time, every
// response `Connection: close`; a request that has not arrived within the
// request timeout, or is larger than 8 KiB, is dropped, so idle or slow clients
// (a port scanner, half-open connections) hold a thread for that long at most.

#include <chrono>
#include <memory>
#include <string>

#include "core/error.h"
#include "daemon/metrics.h"

namespace headroom::daemon {

struct HttpOptions {
  int threads = 16;
  std::chrono::milliseconds request_timeout{2000};
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

/// The response to one request (the text up to and excluding the blank line):
/// status line, headers and body, as sent. Pure, for tests.
[[nodiscard]] std::string http_response(std::string_view request,
                                        const SnapshotCollector& collector);

}  // namespace headroom::daemon
