// Webhook sinks over libcurl: a generic JSON POST (the event as in the JSON-lines
// sink), Slack-compatible {"text": ...}, WeCom {"msgtype":"text","text":{"content":...}}
// and Feishu/Lark {"msg_type":"text","content":{"text":...}}. Each request has a
// timeout; a failure (connection refused, timeout, non-2xx) is retried with
// exponential backoff, all on the sink's own thread.

#include <fmt/format.h>

#include <thread>

#include "core/alerts/render.h"
#include "core/text_out.h"
#include "daemon/curl_api.h"
#include "daemon/redact.h"
#include "daemon/sink_factories.h"

namespace headroom::daemon {

namespace {

using Json = nlohmann::ordered_json;

std::string payload(SinkKind kind, const AlertEvent& event) {
  // Chat is read by the on-call: what to do goes on a line of its own.
  const std::string text = event.action.empty() || event.kind == AlertKind::kResolved
                               ? alert_line(event)
                               : alert_line(event) + "\nwhat to do: " + event.action;
  switch (kind) {
    case SinkKind::kSlack:
      return json_text(Json{{"text", text}});
    case SinkKind::kWecom:
      return json_text(Json{{"msgtype", "text"}, {"text", {{"content", text}}}});
    case SinkKind::kFeishu:
      return json_text(Json{{"msg_type", "text"}, {"content", {{"text", text}}}});
    default:
      return json_text(to_json(event));
  }
}

int abort_when_cancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

std::size_t discard_body(char*, std::size_t size, std::size_t count, void*) { return size * count; }

class WebhookSink final : public AlertSink {
 public:
  WebhookSink(const CurlApi& curl, SinkKind kind, std::string url, DeliveryOptions delivery)
      : curl_(curl), kind_(kind), url_(std::move(url)), delivery_(delivery) {}

  // Scheme, host and port only: the path, user info and query hold the secrets.
  std::string describe() const override { return redact_url(url_); }

  Result<void> send(const AlertEvent& event, const std::atomic<bool>& cancel) override {
    const std::string body = payload(kind_, event);
    std::chrono::milliseconds backoff = delivery_.backoff;
    Error last{Error::Code::kIo, "cancelled before the first try"};
    for (int attempt = 0; attempt <= delivery_.retries; ++attempt) {
      if (attempt > 0) {
        // Back off in small steps so a cancel is seen quickly.
        const auto until = std::chrono::steady_clock::now() + backoff;
        while (!cancel && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        backoff *= 2;
      }
      if (cancel) break;
      auto sent = post(body, cancel);
      if (sent) return {};
      last = sent.error();
    }
    if (cancel) {
      return fail(Error{last.code, "cancelled by shutdown or reload"});
    }
    return fail(
        Error{last.code, fmt::format("{} (after {} tries)", last.message, delivery_.retries + 1)});
  }

 private:
  Result<void> post(const std::string& body, const std::atomic<bool>& cancel) const {
    CURL* curl = curl_.easy_init();
    if (curl == nullptr) return fail(Error::invalid("curl_easy_init failed"));
    curl_slist* headers = curl_.slist_append(nullptr, "Content-Type: application/json");
    curl_.easy_setopt(curl, CURLOPT_URL, url_.c_str());
    curl_.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_.easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_.easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(delivery_.timeout.count()));
    curl_.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                      static_cast<long>(delivery_.timeout.count()));
    curl_.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl_.easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
    curl_.easy_setopt(curl, CURLOPT_USERAGENT, "headroom/" HEADROOM_VERSION);
    // Progress callback: aborts the transfer when the worker is cancelled.
    curl_.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, abort_when_cancelled);
    curl_.easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(&cancel));
    const CURLcode code = curl_.easy_perform(curl);
    long status = 0;
    curl_.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_.slist_free_all(headers);
    curl_.easy_cleanup(curl);
    if (code != CURLE_OK) {
      return fail(Error{Error::Code::kIo, curl_.easy_strerror(code)});
    }
    if (status < 200 || status >= 300) {
      return fail(Error{Error::Code::kIo, fmt::format("HTTP {}", status)});
    }
    return {};
  }

  const CurlApi& curl_;
  SinkKind kind_;
  std::string url_;
  DeliveryOptions delivery_;
};

}  // namespace

Result<std::unique_ptr<AlertSink>> make_webhook_sink(SinkKind kind, std::string url,
                                                     const DeliveryOptions& delivery) {
  auto curl = load_curl();
  if (!curl) return fail(curl.error());
  return std::make_unique<WebhookSink>(**curl, kind, std::move(url), delivery);
}

}  // namespace headroom::daemon
