// The simple sinks: a line on stderr, JSON lines appended to a file, a signal
// to a process (through a pidfd taken when the sink is set up). Webhooks live
// in webhook_sink.cc, exec in exec_sink.cc.

#include "daemon/sinks.h"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <map>
#include <set>

#include "core/alerts/render.h"
#include "core/safe_output.h"
#include "core/text_out.h"
#include "daemon/sink_factories.h"

namespace headroom::daemon {

namespace {

class StderrSink final : public AlertSink {
 public:
  std::string describe() const override { return "standard error"; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    // This host's own log: no need to name the host.
    AlertEvent local = event;
    local.host.clear();
    const std::string line = alert_line(local) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    return {};
  }
};

class JsonlSink final : public AlertSink {
 public:
  explicit JsonlSink(std::string path) : path_(std::move(path)) {}
  std::string describe() const override { return path_; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    // Opened per event so logrotate's move-and-create works without a reload; by the
    // rules of core/safe_output.h, since the daemon runs as root (no symlink, no FIFO,
    // no hard link, no other user's file; created 0640).
    auto file = open_output(path_, ExistingFile::kAppend, 0640);
    if (!file) return fail(file.error());
    const std::string line = json_text(to_json(event)) + "\n";
    // O_APPEND: one write per event, so lines of concurrent writers do not interleave.
    const ssize_t wrote = ::write(file->get(), line.data(), line.size());
    if (wrote != static_cast<ssize_t>(line.size()))  // a short write: the disk filled
      return fail(Error::from_errno(wrote < 0 ? errno : ENOSPC, path_));
    return {};
  }

 private:
  std::string path_;
};

/// glibc 2.36's <sys/pidfd.h> lacks extern "C", so the raw system call.
int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

class SignalSink final : public AlertSink {
 public:
  // The pidfd names the process running now, not whichever one is given its
  // pid after it exits: a job that ended must not cost an unrelated process
  // a SIGUSR1 (whose default action is to terminate).
  SignalSink(int signal, pid_t pid, std::string target)
      : signal_(signal), pid_(pid), target_(std::move(target)), pidfd_(open_pidfd(pid)) {
    if (pidfd_ < 0) open_errno_ = errno;
  }
  ~SignalSink() override {
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  SignalSink(const SignalSink&) = delete;
  SignalSink& operator=(const SignalSink&) = delete;

  std::string describe() const override { return target_; }
  Result<void> send(const AlertEvent& event, const std::atomic<bool>&) override {
    // Only a firing alert asks the job to act (checkpoint and stop); repeats
    // and resolutions would make it act again for the same condition. So would
    // the same condition growing worse (warn, then critical, a second later) or
    // seen by two rules (usage and time-to-full of one filesystem): one signal
    // while any alert about that filesystem (or subject) fires.
    const std::string condition = signal_condition(event);
    const std::string key = event.key();
    if (event.kind == AlertKind::kResolved) {
      firing_[condition].erase(key);
      if (firing_[condition].empty()) firing_.erase(condition);
      return {};
    }
    if (event.kind != AlertKind::kFiring) return {};
    std::set<std::string>& keys = firing_[condition];
    const bool signalled = !keys.empty();
    keys.insert(key);
    if (signalled) return {};
    int sent = -1;
    if (pidfd_ >= 0) {
      sent = static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd_, signal_, nullptr, 0));
    } else if (open_errno_ == ENOSYS) {
      sent = ::kill(pid_, signal_);  // kernels before 5.3 have no pidfd
    } else {
      errno = open_errno_;  // not running when the sink was set up (ESRCH)
    }
    if (sent != 0) {
      return fail(Error::from_errno(errno, fmt::format("kill({}, {})", pid_, signal_)));
    }
    return {};
  }

 private:
  int signal_;
  pid_t pid_;
  /// The filesystem (its mountpoint label) an event is about, else its subject.
  static std::string signal_condition(const AlertEvent& event) {
    const auto mountpoint = event.labels.find("mountpoint");
    return mountpoint != event.labels.end() && !mountpoint->second.empty() ? mountpoint->second
                                                                           : event.subject;
  }

  std::string target_;
  int pidfd_;
  int open_errno_ = 0;
  /// Keys of the firing alerts, by the condition they were signalled for.
  std::map<std::string, std::set<std::string>> firing_;
};

}  // namespace

std::string alert_line(const AlertEvent& event) {
  std::string kind(to_string(event.kind));
  for (char& letter : kind) letter = static_cast<char>(std::toupper(letter));
  const std::string who = event.host.empty() ? "headroom" : "headroom on " + event.host;
  return fmt::format("{}: {} {} {} {}: {}", who, kind, to_string(event.severity), event.rule,
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
