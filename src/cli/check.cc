// headroom check: the preflight.

#include "core/checks/check.h"

#include <iostream>
#include <memory>

#include "cli/check_options.h"
#include "cli/command.h"
#include "core/report/json.h"
#include "core/report/text.h"
#include "core/text_out.h"

namespace headroom::cli {

namespace {

struct CheckCommand {
  CheckFlags flags;
  std::string fail_on = "critical";
};

Severity fail_threshold(const std::string& fail_on) {
  if (fail_on == "warn") return Severity::kWarn;
  if (fail_on == "unknown") return Severity::kUnknown;
  return Severity::kCritical;
}

}  // namespace

std::function<int()> setup_check(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<CheckCommand>();
  add_check_flags(app, command->flags);
  app.add_option(
         "--fail-on", command->fail_on,
         "exit 1 when a finding is at least this bad: critical (default), warn, unknown, never")
      ->check(CLI::IsMember({"critical", "warn", "unknown", "never"}));
  return [command, &globals]() {
    const Context context = make_context(globals);
    auto options = to_check_options(command->flags, context.working_directory);
    if (!options) return usage_error(options.error().message);
    const Report report = run_checks(context, *options);
    if (globals.json) {
      std::cout << json_text(to_json(report), 2) << "\n";
    } else {
      std::cout << render_text(report, stdout_style(globals));
    }
    if (command->fail_on == "never") return static_cast<int>(kExitOk);
    const Severity threshold = fail_threshold(command->fail_on);
    for (const Finding& finding : report.findings) {
      if (finding.severity == Severity::kUnknown
              ? threshold == Severity::kUnknown
              : rank(finding.severity) >= rank(threshold) && finding.severity != Severity::kOk) {
        return static_cast<int>(kExitFindings);
      }
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace headroom::cli
