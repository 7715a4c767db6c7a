#pragma once
// What of a sink's target may be shown in /metrics and in logs. Webhook URLs
// carry their secret in the path (Slack's /services/T.../B.../<token>), in the
// user info (http://user:pass@host) or in the query (?token=...), and /metrics
// is often served to a whole cluster: only the scheme, host and port are shown.

#include <string>
#include <string_view>

namespace headroom::daemon {

/// "https://hooks.slack.com" for "https://hooks.slack.com/services/T0/B0/s3cr3t",
/// "http://host:8080" for "http://user:pass@host:8080/h?token=abc"; text that is not a URL
/// keeps only what comes before its first '/', '?', '#' or '@'.
[[nodiscard]] std::string redact_url(std::string_view url);

}  // namespace headroom::daemon
