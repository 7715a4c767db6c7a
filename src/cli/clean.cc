// headroom clean [--shm] [--tmp] [--older-than D] [--all-users] [--yes]:
// prints the plan; with --yes re-checks and removes each item, and appends
// one JSON line per removal to the audit log (docs/who-clean.md).
// Exit: 0 plan printed / everything planned removed; 1 something was kept only because
// processes could not be inspected, or with --yes something planned was skipped at the
// re-check or the audit log failed; 2 usage error (a refused temp dir too) or could not run.

#include "core/clean/clean.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <csignal>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/clean/render.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

// Holds back the signals that end a run until the object goes away; the report is flushed
// first, then the signal takes its default (or the caller's) action as it would have.
class DeferredSignals {
 public:
  DeferredSignals() {
    ::sigemptyset(&set_);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaddset(&set_, signal);
    ::sigprocmask(SIG_BLOCK, &set_, &previous_);
  }
  ~DeferredSignals() {
    std::cout.flush();
    ::sigprocmask(SIG_SETMASK, &previous_, nullptr);
  }
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;

  [[nodiscard]] bool pending() const {
    sigset_t pending;
    if (::sigpending(&pending) != 0) return false;
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      if (::sigismember(&pending, signal) == 1) return true;
    }
    return false;
  }

 private:
  sigset_t set_{};
  sigset_t previous_{};
};

struct CleanCommand {
  bool shm = false;
  bool tmp = false;
  std::string older_than;
  bool all_users = false;
  std::string user;
  bool yes = false;
  std::string audit_log;
  std::string tmp_dir;
  std::string grace = "2s";
  std::vector<int> ignore_unreadable;
};

// --user: a uid, or a name as the system's user database knows it (NSS: LDAP and sssd
// users too).
Result<uid_t> parse_user(const std::string& text) {
  uid_t uid = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (!text.empty() && parsed.ec == std::errc() && parsed.ptr == text.data() + text.size()) {
    return uid;
  }
  if (const passwd* entry = ::getpwnam(text.c_str()); entry != nullptr) return entry->pw_uid;
  return fail(Error::invalid(fmt::format("--user: no user '{}'", text)));
}

}  // namespace

std::function<int()> setup_clean(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<CleanCommand>();
  app.add_flag("--shm", command->shm,
               "stale /dev/shm segments (torch_*, nccl-*, sem.*, psm_*, "
               "__KMP_*) and SysV segments with no attachments");
  app.add_flag("--tmp", command->tmp, "entries of the temp dir ($TMPDIR or /tmp) no process uses");
  app.add_option("--tmp-dir", command->tmp_dir,
                 "the temp dir to clean with --tmp (default $TMPDIR, else /tmp; from $TMPDIR it "
                 "must be sticky and world-writable like /tmp; never a system directory)");
  app.add_option("--grace", command->grace,
                 "with --yes, watch planned entries this long for use before removing any "
                 "(default 2s; 0 = do not watch)");
  app.add_option("--older-than", command->older_than,
                 "only entries unmodified this long (tmp default 1d; shm: any age)");
  app.add_flag("--all-users", command->all_users, "everybody's files, not only yours (root only)");
  app.add_option("--user", command->user,
                 "USER|UID: that user's files instead of yours (root only; a Slurm epilog "
                 "cleans up after the job's owner)");
  app.add_flag("--yes", command->yes, "remove (default: print the plan only)");
  app.add_option("--ignore-unreadable", command->ignore_unreadable,
                 "PID,... : processes that cannot be inspected but that you know use nothing in "
                 "/dev/shm or the temp dir (what they could use is kept otherwise; docs/safety.md)")
      ->delimiter(',')
      ->check(pid_validator());
  app.add_option("--audit-log", command->audit_log,
                 "JSON-lines log of removals (default: /var/log/headroom/clean.log for root, "
                 "else $XDG_STATE_HOME/headroom/clean.log)");
  return [command, &globals]() {
    const Context context = make_context(globals);
    CleanOptions options;
    options.shm = command->shm;
    options.tmp = command->tmp;
    options.all_users = command->all_users;
    options.ignore_unreadable = command->ignore_unreadable;
    if (!command->user.empty()) {
      auto uid = parse_user(command->user);
      if (!uid) return usage_error(uid.error().message);
      options.user = *uid;
    }
    if (!command->older_than.empty()) {
      auto duration = parse_duration(command->older_than);
      if (!duration) return usage_error("--older-than: " + duration.error().message);
      options.older_than = std::chrono::duration_cast<std::chrono::seconds>(*duration);
    }
    if (!command->tmp_dir.empty()) {
      options.tmp_dir = command->tmp_dir;
      options.tmp_dir_explicit = true;
    } else {
      options.tmp_dir = context.env("TMPDIR").value_or("/tmp");
      if (options.tmp_dir.empty()) options.tmp_dir = "/tmp";
    }
    {
      auto grace = parse_duration(command->grace);
      if (!grace) return usage_error("--grace: " + grace.error().message);
      options.grace = std::chrono::duration_cast<std::chrono::milliseconds>(*grace);
    }
    options.audit_log = command->audit_log.empty() ? default_audit_log(context)
                                                   : std::filesystem::path(command->audit_log);
    if (auto valid = validate(options, context); !valid) return usage_error(valid.error().message);

    auto plan = plan_clean(context, options);
    if (!plan) return usage_error(plan.error().message);
    const bool verbose = globals.verbose;
    if (!command->yes) {
      if (globals.json) {
        std::cout << json_text(clean_plan_to_json(*plan), 2) << "\n";
      } else {
        std::cout << render_clean_plan(*plan, verbose);
      }
      return plan->blocking_pids.empty() ? static_cast<int>(kExitOk)
                                         : static_cast<int>(kExitFindings);
    }

    // SIGINT/SIGTERM/SIGHUP/SIGQUIT wait until the current batch is finished (nothing is
    // left renamed), then end the process as they would have, after the report.
    DeferredSignals deferred;
    const CleanResult result =
        apply_clean(context, options, *plan, [&deferred] { return deferred.pending(); });
    if (globals.json) {
      std::cout << json_text(clean_result_to_json(result, *plan, options), 2) << "\n";
    } else {
      std::cout << render_clean_result(result, *plan, options);
      for (const std::string& error : result.audit_errors)
        std::cerr << "headroom: audit log: " << error << "\n";
    }
    const bool clean_run =
        result.skipped.empty() && result.audit_errors.empty() && plan->blocking_pids.empty();
    return clean_run ? static_cast<int>(kExitOk) : static_cast<int>(kExitFindings);
  };
}

}  // namespace headroom::cli
