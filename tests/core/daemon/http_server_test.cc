// The exporter's answers, request by request (daemon/http_server.h).

#include "daemon/http_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

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
  // HTTP/1.1 keeps the connection for the next scrape; HTTP/1.0 closes it.
  EXPECT_EQ(metrics.find("Connection:"), std::string::npos);
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos);

  const std::string index = http_response("GET / HTTP/1.1\r\n", collector);
  EXPECT_EQ(status_line(index), "HTTP/1.1 200 OK");
  EXPECT_NE(index.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(index.find("<a href=\"/metrics\">"), std::string::npos);

  EXPECT_EQ(status_line(http_response("GET /favicon.ico HTTP/1.1\r\n", collector)),
            "HTTP/1.1 404 Not Found");
  const std::string post = http_response("POST /metrics HTTP/1.1\r\n", collector);
  EXPECT_EQ(status_line(post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos);
  // Empty lines before a request are skipped (RFC 9112 2.2).
  EXPECT_EQ(status_line(http_response("\r\n\nGET / HTTP/1.1\r\n\r\n", collector)),
            "HTTP/1.1 200 OK");
  // What a proxy in front could read otherwise is refused (RFC 9112 5.1): a space before
  // the colon, a bare CR, a line without a colon, a folded line, a doubled space.
  for (const char* garbage :
       {"", "\r\n", "GET", "GET /", "GET / FTP/1.0", "\x16\x03\x01",
        "GET /metrics HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
        "GET /metrics HTTP/1.1\rContent-Length: 5\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: x\rConnection: close\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: x\r\n folded: y\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1 x\r\n\r\n"}) {
    EXPECT_EQ(status_line(http_response(garbage, collector)), "HTTP/1.1 400 Bad Request")
        << garbage;
  }
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// The lines of a page, sorted, each sample's value read as a double and written with 15
/// significant digits: prometheus-cpp writes 16 digits, headroom the shortest text that
/// reads back as the same double; both are that double.
std::vector<std::string> sorted_values(const std::string& text) {
  std::vector<std::string> lines = sorted_lines(text);
  for (std::string& line : lines) {
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.rfind(' ');
    const double value = std::stod(line.substr(space + 1));
    line = line.substr(0, space + 1) + fmt::format("{:.15g}", value);
  }
  return lines;
}

// The page is rendered into buffers kept from one sample to the next: a family that the
// next snapshot lacks leaves the page, and one that comes back is there once, as the
// serializer writes that snapshot.
TEST(SnapshotCollector, EachPageIsItsOwnSnapshotOnly) {
  Snapshot with_sink;
  with_sink.sinks = {{"webhook#1", "https://example.com/x", 2, 0, 0}};
  with_sink.taken = std::chrono::steady_clock::now();
  Snapshot without = with_sink;
  without.sinks.clear();
  without.samples_total = 5;
  SnapshotCollector collector;
  for (const Snapshot* snapshot : {&with_sink, &without, &with_sink, &with_sink}) {
    collector.publish(std::make_shared<Snapshot>(*snapshot));
    std::string tail;
    const auto page = collector.page(snapshot->taken, tail);
    ASSERT_TRUE(page);
    EXPECT_EQ(sorted_values(*page),
              sorted_values(prometheus::TextSerializer().Serialize(to_metric_families(*snapshot))));
    const std::size_t help = page->find("# HELP headroom_alert_sink_sent_total");
    EXPECT_EQ(help != std::string::npos, !snapshot->sinks.empty()) << *page;
    if (help != std::string::npos) {
      EXPECT_EQ(page->find("# HELP headroom_alert_sink_sent_total", help + 1), std::string::npos);
    }
  }
}

// The page a scrape sends is the text rendered at publish plus the scrape-time
// lines: the same series, help texts and values as prometheus-cpp's serializer
// gives for the whole snapshot, label values escaped alike.
TEST(SnapshotCollector, PageIsTheSerializedSnapshotWithLiveSinkCounters) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->samples_total = 12345678901234567;
  snapshot->sample_duration_seconds = 1.0 / 3;
  snapshot->taken = std::chrono::steady_clock::now();
  snapshot->last_complete = snapshot->taken;
  SnapshotCollector collector;
  EXPECT_EQ(collector.text(snapshot->taken), "");  // before the first sample: an empty page
  collector.publish(snapshot);
  auto counters = std::make_shared<SinkCounters>();
  counters->sent = 3;
  counters->failed = 1;
  const std::string odd = "exec#1 \"q\" \\ \n";
  collector.set_sinks({{odd, "/bin/x", counters}});
  const std::string page = collector.text(snapshot->taken + std::chrono::milliseconds(1500));

  Snapshot with_sinks = *snapshot;
  with_sinks.sinks = {{odd, "/bin/x", 3, 1, 0}};
  const std::string expected =
      prometheus::TextSerializer().Serialize(to_metric_families(with_sinks)) +
      "# HELP headroom_sample_age_seconds Seconds since the last sample was taken: grows when "
      "sampling is stuck\n# TYPE headroom_sample_age_seconds gauge\n"
      "headroom_sample_age_seconds 1.5\n"
      "# HELP headroom_last_complete_sample_age_seconds Seconds since the last sample that "
      "measured every watched path (none hung)\n"
      "# TYPE headroom_last_complete_sample_age_seconds gauge\n"
      "headroom_last_complete_sample_age_seconds 1.5\n";
  EXPECT_EQ(sorted_values(page), sorted_values(expected)) << page;
  // Values are exact: the count of samples as an integer, a third to the last bit.
  EXPECT_NE(page.find("headroom_samples_total 1.2345678901234568e+16\n"), std::string::npos);
  EXPECT_NE(page.find("headroom_sample_duration_seconds 0.3333333333333333\n"), std::string::npos);
  EXPECT_NE(page.find("headroom_alert_sink_sent_total{sink=\"exec#1 \\\"q\\\" \\\\ \\n\","
                      "target=\"/bin/x\"} 3\n"),
            std::string::npos)
      << page;
  // Counters are read at each scrape, the rest only at publish.
  counters->dropped = 7;
  EXPECT_NE(collector.text(snapshot->taken).find("\"} 7\n"), std::string::npos);
}

}  // namespace
}  // namespace headroom::daemon
