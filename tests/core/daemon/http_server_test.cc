// The exporter's answers, request by request (daemon/http_server.h).

#include "daemon/http_server.h"

#include <gtest/gtest.h>

namespace headroom::daemon {
namespace {

std::string status_line(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

TEST(HttpResponse, MetricsIndexAndTheRest) {
  SnapshotCollector collector;
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->samples_total = 3;
  collector.publish(snapshot);

  const std::string metrics = http_response("GET /metrics HTTP/1.1\r\nHost: x\r\n", collector);
  EXPECT_EQ(status_line(metrics), "HTTP/1.1 200 OK");
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("\r\n\r\n# HELP headroom_"), std::string::npos);
  EXPECT_NE(metrics.find("headroom_samples_total 3"), std::string::npos);
  // Prometheus may add a query string; HEAD has the headers only.
  EXPECT_EQ(status_line(http_response("GET /metrics?x=1 HTTP/1.1\r\n", collector)),
            "HTTP/1.1 200 OK");
  const std::string head = http_response("HEAD /metrics HTTP/1.0\r\n", collector);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");

  const std::string index = http_response("GET / HTTP/1.1\r\n", collector);
  EXPECT_EQ(status_line(index), "HTTP/1.1 200 OK");
  EXPECT_NE(index.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(index.find("<a href=\"/metrics\">"), std::string::npos);

  EXPECT_EQ(status_line(http_response("GET /favicon.ico HTTP/1.1\r\n", collector)),
            "HTTP/1.1 404 Not Found");
  const std::string post = http_response("POST /metrics HTTP/1.1\r\n", collector);
  EXPECT_EQ(status_line(post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos);
  for (const char* garbage : {"", "\r\n", "GET", "GET /", "GET / FTP/1.0", "\x16\x03\x01"}) {
    EXPECT_EQ(status_line(http_response(garbage, collector)), "HTTP/1.1 400 Bad Request")
        << garbage;
  }
}

}  // namespace
}  // namespace headroom::daemon
