#pragma once
// Alert sinks: where firing / repeat / resolved events go. Each sink's send()
// may block (a webhook, a command); SinkWorker runs it on its own thread so
// sampling never waits for it.

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "core/alerts/rules.h"
#include "core/error.h"
#include "daemon/config.h"

namespace headroom::daemon {

/// One destination for alert events.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  /// What the sink delivers to, without secrets ("https://hooks.slack.com", a file path,
  /// "USR1:1234"): for logs and the `target` label of metrics.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Delivers one event, retrying as configured; the Error says why it gave up.
  /// Gives up early once `cancel` is set (shutdown, reload), so no send outlives
  /// the daemon by more than a moment.
  [[nodiscard]] virtual Result<void> send(const AlertEvent& event,
                                          const std::atomic<bool>& cancel) = 0;
};

/// Builds the sink for a spec; an Error for a bad target (unknown signal name, ...).
[[nodiscard]] Result<std::unique_ptr<AlertSink>> make_sink(const SinkSpec& spec,
                                                           const DeliveryOptions& delivery);

/// The one line a person reads: "headroom: FIRING critical filesystem_fill_eta /ckpt: ...",
/// "headroom on gpu-07: FIRING ..." when the event names its host.
[[nodiscard]] std::string alert_line(const AlertEvent& event);

/// Environment variables describing an event, for the exec sink:
/// HEADROOM_ALERT_KIND, _RULE, _SUBJECT, _SEVERITY, _SUMMARY, _VALUE, _THRESHOLD, _TIME, _HOST,
/// _JSON.
[[nodiscard]] std::vector<std::string> alert_environment(const AlertEvent& event);

}  // namespace headroom::daemon
