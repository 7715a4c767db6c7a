// The exec sink: runs a command (through /bin/sh -c) for every event, with the
// alert in HEADROOM_ALERT_* environment variables. The command is killed (its
// process group, which we started) if it outlives the delivery timeout.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "core/alerts/render.h"
#include "core/text_out.h"
#include "daemon/sink_factories.h"

extern char** environ;

namespace headroom::daemon {

namespace {

class ExecSink final : public AlertSink {
 public:
  ExecSink(std::string command, DeliveryOptions delivery)
      : command_(std::move(command)), delivery_(delivery) {}
  // Not the command: it may carry a token (curl -H "Authorization: ...").
  std::string describe() const override { return "a shell command"; }

  Result<void> send(const AlertEvent& event, const std::atomic<bool>& cancel) override {
    // Build argv and envp before fork: after fork in a threaded process only
    // async-signal-safe calls are allowed.
    std::vector<std::string> variables;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      if (std::string_view(*entry).rfind("HEADROOM_ALERT_", 0) != 0) variables.emplace_back(*entry);
    }
    for (std::string& variable : alert_environment(event)) variables.push_back(std::move(variable));
    std::vector<char*> envp;
    envp.reserve(variables.size() + 1);
    for (std::string& variable : variables) envp.push_back(variable.data());
    envp.push_back(nullptr);
    std::string shell = "/bin/sh";
    std::string flag = "-c";
    std::vector<char*> argv = {shell.data(), flag.data(), command_.data(), nullptr};

    sigset_t unblocked;
    sigemptyset(&unblocked);
    const pid_t pid = ::fork();
    if (pid < 0) return fail(Error::from_errno(errno, "fork"));
    if (pid == 0) {
      // Run like a command started from a shell: in a process group of its own,
      // so a timeout kills what it started too; with no signal blocked (watch
      // blocks SIGHUP/SIGINT/SIGTERM in its threads and execve keeps the mask,
      // so `timeout` or `kill -TERM` would not stop it); printing to stderr,
      // as stdout carries --json.
      ::setpgid(0, 0);
      ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: the group must exist before a kill below
    const auto deadline = std::chrono::steady_clock::now() + delivery_.timeout;
    int status = 0;
    while (true) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0) return fail(Error::from_errno(errno, "waitpid"));
      if (cancel || std::chrono::steady_clock::now() >= deadline) {
        ::kill(-pid, SIGKILL);  // the group: the shell and whatever it started
        ::waitpid(pid, &status, 0);
        return fail(Error{Error::Code::kIo,
                          fmt::format("timed out after {} ms", delivery_.timeout.count())});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    return fail(Error{Error::Code::kIo, fmt::format("exited with status {}",
                                                    WIFEXITED(status) ? WEXITSTATUS(status)
                                                                      : 128 + WTERMSIG(status))});
  }

 private:
  std::string command_;
  DeliveryOptions delivery_;
};

}  // namespace

std::vector<std::string> alert_environment(const AlertEvent& event) {
  return {"HEADROOM_ALERT_KIND=" + std::string(to_string(event.kind)),
          "HEADROOM_ALERT_RULE=" + event.rule,
          "HEADROOM_ALERT_SUBJECT=" + event.subject,
          "HEADROOM_ALERT_SEVERITY=" + std::string(to_string(event.severity)),
          "HEADROOM_ALERT_SUMMARY=" + event.summary,
          fmt::format("HEADROOM_ALERT_VALUE={}", event.value),
          fmt::format("HEADROOM_ALERT_THRESHOLD={}", event.threshold),
          "HEADROOM_ALERT_TIME=" + rfc3339(event.time),
          "HEADROOM_ALERT_HOST=" + event.host,
          "HEADROOM_ALERT_ID=" + event.id,
          "HEADROOM_ALERT_ACTION=" + event.action,
          "HEADROOM_ALERT_JSON=" + json_text(to_json(event))};
}

Result<std::unique_ptr<AlertSink>> make_exec_sink(std::string command,
                                                  const DeliveryOptions& delivery) {
  return std::make_unique<ExecSink>(std::move(command), delivery);
}

}  // namespace headroom::daemon
