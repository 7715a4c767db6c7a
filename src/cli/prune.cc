// headroom prune: checkpoint retention, dry run unless --yes.

#include "core/prune/prune.h"

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/operand.h"
#include "core/prune/render.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

struct PruneCommand {
  std::string dir;
  std::size_t keep_last = 0;
  std::size_t keep_best = 0;
  std::string metric;
  std::string mode = "auto";
  std::uint64_t keep_every = 0;
  std::string settle = "200ms";
  bool yes = false;
  bool no_holders = false;
  std::vector<int> ignore_unreadable;
};

}  // namespace

std::function<int()> setup_prune(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<PruneCommand>();
  app.add_option("dir", command->dir, "directory holding the checkpoints")->required();
  app.add_option("--keep-last", command->keep_last, "keep the N newest complete checkpoints")
      ->required()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_option("--keep-best", command->keep_best,
                 "also keep the N best by the metric in their names (e.g. val_loss=0.123)");
  app.add_option("--metric", command->metric,
                 "metric for --keep-best (default: the only one in the names)");
  app.add_option("--mode", command->mode,
                 "min or max: which metric value is better (default: from its name)")
      ->check(CLI::IsMember({"auto", "min", "max"}));
  app.add_option("--keep-every", command->keep_every,
                 "also keep checkpoints whose step is a multiple of K");
  app.add_option("--settle", command->settle,
                 "interval of the still-growing check (default 200ms)");
  app.add_flag("--yes", command->yes, "delete (without it: print the plan only)");
  app.add_flag("--no-holders", command->no_holders,
               "do not scan /proc for processes holding checkpoints");
  app.add_option("--ignore-unreadable", command->ignore_unreadable,
                 "PID,... : processes that cannot be inspected but that you know use nothing "
                 "in DIR (what they could use is kept otherwise; docs/safety.md)")
      ->delimiter(',')
      ->check(pid_validator());
  return [command, &globals]() {
    const Context context = make_context(globals);
    PruneOptions options;
    auto operand = resolve_operand(context, command->dir);
    if (!operand) return usage_error(operand.error().message);
    options.dir = operand->path;
    options.policy.keep_last = command->keep_last;
    options.policy.keep_best = command->keep_best;
    options.policy.metric = command->metric;
    options.policy.mode = command->mode == "min"   ? MetricMode::kMin
                          : command->mode == "max" ? MetricMode::kMax
                                                   : MetricMode::kAuto;
    options.policy.keep_every = command->keep_every;
    auto settle = parse_duration(command->settle);
    if (!settle) return usage_error(settle.error().message);
    options.settle = *settle;
    options.remove = command->yes;
    options.in_use = !command->no_holders;
    options.ignore_unreadable = command->ignore_unreadable;
    auto result = run_prune(context, options);
    if (!result) return usage_error(result.error().message);
    if (globals.json) {
      auto out = prune_to_json(*result);
      out["given_dir"] = operand->given.string();
      std::cout << json_text(out, 2) << "\n";
    } else {
      std::cout << render_prune_text(*result, stdout_style(globals));
      if (operand->followed()) std::cout << operand->note() << "\n";
    }
    return result->not_removed() > 0 ? static_cast<int>(kExitFindings) : static_cast<int>(kExitOk);
  };
}

}  // namespace headroom::cli
