#pragma once
// Constructors of the sinks that live in their own files (internal to the daemon).

#include <memory>
#include <string>

#include "daemon/sinks.h"

namespace headroom::daemon {

/// A webhook of the given dialect (generic JSON, Slack, WeCom, Feishu) with timeout and retries.
[[nodiscard]] Result<std::unique_ptr<AlertSink>> make_webhook_sink(SinkKind kind, std::string url,
                                                                   const DeliveryOptions& delivery);
/// Runs `command` with /bin/sh -c and the alert in HEADROOM_ALERT_* variables.
[[nodiscard]] Result<std::unique_ptr<AlertSink>> make_exec_sink(std::string command,
                                                                const DeliveryOptions& delivery);

}  // namespace headroom::daemon
