// The simple sinks: a line on stderr, JSON lines appended to a file, a signal
// to a pid. Webhooks live in webhook_sink.cc, exec in exec_sink.cc.

#include "daemon/sinks.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "core/alerts/watch_json.h"
#include "daemon/sink_factories.h"

namespace headroom::daemon {

namespace {

class StderrSink final : public AlertSink {
 public:
  std::string describe() const override { return "stderr"; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    const std::string line = alert_line(event) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    return {};
  }
};

class JsonlSink final : public AlertSink {
 public:
  explicit JsonlSink(std::string path) : path_(std::move(path)) {}
  std::string describe() const override { return "jsonl " + path_; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    // Opened per event so logrotate's move-and-create works without a reload.
    std::ofstream out(path_, std::ios::app);
    if (!out) return fail(Error::from_errno(errno, path_));
    out << to_json(event).dump() << "\n";
    out.flush();
    if (!out) return fail(Error::from_errno(errno, path_));
    return {};
  }

 private:
  std::string path_;
};

class SignalSink final : public AlertSink {
 public:
  SignalSink(int signal, pid_t pid, std::string target)
      : signal_(signal), pid_(pid), target_(std::move(target)) {}
  std::string describe() const override { return "signal " + target_; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    // Only a firing alert asks the job to act (checkpoint and stop); repeats
    // and resolutions would make it act again for the same condition.
    if (event.kind != AlertKind::kFiring) return {};
    if (::kill(pid_, signal_) != 0) {
      return fail(Error::from_errno(errno, fmt::format("kill({}, {})", pid_, signal_)));
    }
    return {};
  }

 private:
  int signal_;
  pid_t pid_;
  std::string target_;
};

}  // namespace

std::string alert_line(const AlertEvent& event) {
  std::string kind(to_string(event.kind));
  for (char& letter : kind) letter = static_cast<char>(std::toupper(letter));
  return fmt::format("headroom: {} {} {} {}: {}", kind, to_string(event.severity), event.rule,
                     event.subject, event.summary);
}

Result<std::unique_ptr<AlertSink>> make_sink(const SinkSpec& spec,
                                             const DeliveryOptions& delivery) {
  if (auto valid = validate(spec); !valid) return fail(valid.error());
  switch (spec.kind) {
    case SinkKind::kStderr:
      return std::make_unique<StderrSink>();
    case SinkKind::kJsonl:
      return std::make_unique<JsonlSink>(spec.target);
    case SinkKind::kSignal: {
      auto target = parse_signal_target(spec.target);
      if (!target) return fail(target.error());
      return std::make_unique<SignalSink>(target->signal, target->pid, spec.target);
    }
    case SinkKind::kExec:
      return make_exec_sink(spec.target, delivery);
    case SinkKind::kWebhook:
    case SinkKind::kSlack:
    case SinkKind::kWecom:
    case SinkKind::kFeishu:
      return make_webhook_sink(spec.kind, spec.target, delivery);
  }
  return fail(Error::invalid("unknown sink"));
}

}  // namespace headroom::daemon
