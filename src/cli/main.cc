// headroom: parses argv, picks the subcommand from the table, returns its exit code.

#include <algorithm>
#include <array>
#include <iostream>

#include "cli/command.h"

namespace headroom::cli {
namespace {

constexpr std::array kCommands = {
    Command{"check", "preflight: find every host resource that would kill a training job",
            setup_check},
    Command{"who", "which processes hold files at or under a path (open, mapped, deleted)",
            setup_who},
    Command{"clean", "reclaim stale /dev/shm segments and old unused temp files (plan unless --yes)",
            setup_clean},
    Command{"run", "supervise a training command: warn before the host runs out, say why it died",
            setup_run},
    Command{"du", "the largest entries under a path: size, files, age, owner, and who holds them",
            setup_du},
    Command{"prune", "checkpoint retention: keep the last/best/every-K, delete the rest (dry run unless --yes)",
            setup_prune},
    Command{"watch", "monitor disks, /dev/shm and memory: time-to-full, alerts, Prometheus /metrics",
            setup_watch},
    Command{"explain", "read a failed job's log: name the root cause, with evidence and the fix",
            setup_explain},
};

int main_impl(int argc, char** argv) {
  CLI::App app{"headroom: find and fix the host resources that kill training jobs", "headroom"};
  app.set_version_flag("--version", std::string("headroom ") + HEADROOM_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  Globals globals;
  app.add_flag("--json", globals.json, "print one JSON document (schema: docs/json.md)");
  app.add_flag("--no-color", globals.no_color, "no colour even on a terminal (also: NO_COLOR=1)");
  app.add_flag("-v,--verbose", globals.verbose, "more detail");
  app.add_option("--root", globals.root, "read /proc, /sys and /dev under this prefix (testing)")
      ->group("");  // hidden

  std::vector<std::function<int()>> actions;
  std::vector<CLI::App*> subcommands;
  for (const Command& command : kCommands) {
    CLI::App* sub = app.add_subcommand(std::string(command.name), std::string(command.help));
    subcommands.push_back(sub);
    actions.push_back(command.setup(*sub, globals));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    // CLI11 reports an unknown subcommand as "A subcommand is required"; name it.
    std::string_view first = argc > 1 ? argv[1] : "";
    const bool known = std::any_of(kCommands.begin(), kCommands.end(),
                                   [&](const Command& command) { return command.name == first; });
    if (!first.empty() && first.front() != '-' && !known) {
      std::cerr << "headroom: unknown command '" << first << "'\n";
    } else {
      std::cerr << "headroom: " << error.what() << "\n";
    }
    std::cerr << "Run 'headroom --help' or 'headroom <command> --help' for usage.\n";
    return kExitUsage;
  }
  for (std::size_t i = 0; i < subcommands.size(); ++i) {
    if (subcommands[i]->parsed()) return actions[i]();
  }
  return kExitUsage;
}

}  // namespace
}  // namespace headroom::cli

int main(int argc, char** argv) {
  try {
    return headroom::cli::main_impl(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "headroom: internal error: " << error.what() << "\n";
    return headroom::cli::kExitUsage;
  }
}
