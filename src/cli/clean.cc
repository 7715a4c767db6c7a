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
#include <nlohmann/json.hpp>

#include "cli/command.h"
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

// $XDG_STATE_HOME/headroom/clean.log, ~/.local/state/headroom/clean.log, or for root
// /var/log/headroom/clean.log.
std::filesystem::path default_audit_log(const Context& context) {
  if (context.syscalls->effective_uid() == 0) return "/var/log/headroom/clean.log";
  if (auto state = context.env("XDG_STATE_HOME"))
    return std::filesystem::path(*state) / "headroom/clean.log";
  if (auto home = context.env("HOME"))
    return std::filesystem::path(*home) / ".local/state/headroom/clean.log";
  return "";
}

// --user: a uid, or a login name as the system's NSS knows it (LDAP and sssd users included,
// as on most clusters).
Result<uid_t> parse_user(const std::string& text) {
  uid_t uid = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (!text.empty() && parsed.ec == std::errc() && parsed.ptr == text.data() + text.size()) {
    return uid;
  }
  if (const passwd* entry = ::getpwnam(text.c_str()); entry != nullptr) return entry->pw_uid;
  return fail(Error::invalid(fmt::format("--user: no user '{}'", text)));
}

nlohmann::ordered_json item_json(const CleanItem& item) {
  nlohmann::ordered_json out;
  out["kind"] = std::string(to_string(item.kind));
  out["path"] = item.path.string();
  out["bytes"] = item.bytes;
  if (item.kind == CleanKind::kTmpDir) out["files"] = item.files;
  out["age_seconds"] = item.age.count();
  out["owner"] = item.owner;
  out["uid"] = item.uid;
  out["why_safe"] = item.why_safe;
  return out;
}

nlohmann::ordered_json kept_json(const std::vector<KeptItem>& kept) {
  auto out = nlohmann::ordered_json::array();
  for (const KeptItem& item : kept) {
    out.push_back({{"path", item.path.string()}, {"reason", item.reason}, {"bytes", item.bytes}});
  }
  return out;
}

void print_items(const std::vector<CleanItem>& items) {
  for (const CleanItem& item : items) {
    std::cout << fmt::format(
        "  {:>10}  {:>8}  {:<10} {}{}\n      {}\n", format_bytes(item.bytes),
        format_duration(item.age), item.owner, item.path.string(),
        item.kind == CleanKind::kTmpDir ? fmt::format("/ ({} entries)", item.files) : "",
        item.why_safe);
  }
}

// Why some entries could not be proven unused, and the two ways forward.
void print_visibility(const CleanPlan& plan) {
  if (plan.blocking_pids.empty() && plan.visibility_note.empty()) return;
  std::cout << "Kept because not every process could be seen: " << plan.visibility_note << "\n";
  if (!plan.blocking_pids.empty()) {
    std::string pids;
    for (int pid : plan.blocking_pids) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    std::cout << "  run as root, or if you are sure they use nothing there: --ignore-unreadable "
              << pids << "\n";
  }
}

void print_kept(const std::vector<KeptItem>& kept, bool verbose, std::string_view verb) {
  if (kept.empty()) return;
  std::cout << fmt::format("{} {} item{}:\n", verb, kept.size(), kept.size() == 1 ? "" : "s");
  const std::size_t shown = verbose ? kept.size() : std::min<std::size_t>(kept.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    std::cout << fmt::format("  {}: {}\n", kept[i].path.string(), kept[i].reason);
  }
  if (shown < kept.size())
    std::cout << fmt::format("  ... {} more (-v shows all)\n", kept.size() - shown);
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
        nlohmann::ordered_json out;
        out["mode"] = "plan";
        out["items"] = nlohmann::ordered_json::array();
        for (const CleanItem& item : plan->items) out["items"].push_back(item_json(item));
        out["total_bytes"] = plan->total_bytes;
        out["kept"] = kept_json(plan->kept);
        out["processes_scanned"] = plan->processes_scanned;
        out["unreadable_pids"] = plan->unreadable_pids;
        out["blocking_pids"] = plan->blocking_pids;
        out["visibility_note"] = plan->visibility_note;
        std::cout << out.dump(2) << "\n";
      } else {
        std::cout << fmt::format("Would free {} in {} item{}{}\n", format_bytes(plan->total_bytes),
                                 plan->items.size(), plan->items.size() == 1 ? "" : "s",
                                 plan->items.empty() ? "" : " (run again with --yes to remove):");
        print_items(plan->items);
        print_kept(plan->kept, verbose, "Keeping");
        print_visibility(*plan);
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
      nlohmann::ordered_json out;
      out["mode"] = "apply";
      out["removed"] = nlohmann::ordered_json::array();
      for (const CleanItem& item : result.removed) out["removed"].push_back(item_json(item));
      out["freed_bytes"] = result.freed_bytes;
      out["skipped"] = kept_json(result.skipped);
      out["kept"] = kept_json(plan->kept);
      out["audit_log"] = options.audit_log.string();
      out["audit_errors"] = result.audit_errors;
      out["blocking_pids"] = plan->blocking_pids;
      out["visibility_note"] = plan->visibility_note;
      out["interrupted"] = result.interrupted;
      std::cout << out.dump(2) << "\n";
    } else {
      if (result.interrupted) {
        std::cout << "Interrupted: finished the items under way, left the rest untouched\n";
      }
      std::cout << fmt::format("Freed {}: removed {} item{}, skipped {}\n",
                               format_bytes(result.freed_bytes), result.removed.size(),
                               result.removed.size() == 1 ? "" : "s", result.skipped.size());
      print_items(result.removed);
      print_kept(result.skipped, true, "Skipped at the re-check");
      print_visibility(*plan);
      if (!result.removed.empty() && !options.audit_log.empty()) {
        std::cout << "audit log: " << options.audit_log.string() << "\n";
      }
      for (const std::string& error : result.audit_errors)
        std::cerr << "headroom: audit log: " << error << "\n";
    }
    const bool clean_run =
        result.skipped.empty() && result.audit_errors.empty() && plan->blocking_pids.empty();
    return clean_run ? static_cast<int>(kExitOk) : static_cast<int>(kExitFindings);
  };
}

}  // namespace headroom::cli
