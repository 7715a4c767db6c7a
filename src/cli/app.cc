// The program body of headroom (see app.h).

#include "cli/app.h"

#include <algorithm>
#include <iostream>

namespace headroom::cli {

namespace {

/// CLI11 converts "-1" for an unsigned option to its largest value (`du --top -1` listed
/// everything): every unsigned option of every command refuses a negative number instead.
void refuse_negative_counts(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name() != "UINT") continue;
    option->check(CLI::Validator(
        [](const std::string& value) {
          return value.starts_with('-') ? "must not be negative, got " + value : std::string();
        },
        "", "not negative"));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_negative_counts(*sub);
}

int run_parsed(int argc, char** argv, std::span<const Command> commands) {
  CLI::App app{"headroom: find and fix the host resources that kill training jobs", "headroom"};
  app.set_version_flag("--version", std::string("headroom ") + HEADROOM_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  Globals globals;
  globals.argc = argc;
  globals.argv = argv;
  app.add_flag("--json", globals.json, "print one JSON document (schema: docs/json.md)");
  app.add_flag("--no-color", globals.no_color, "no colour even on a terminal (also: NO_COLOR=1)");
  app.add_flag("-v,--verbose", globals.verbose, "more detail");
  app.add_option("--host-root", globals.root,
                 "the host's / is mounted at DIR (a node agent's /host): read its /proc, /sys, "
                 "/dev/shm and paths there")
      ->option_text("DIR");
  // The name tests and early deployments used; same meaning, not listed.
  app.add_option("--root", globals.root)->group("");

  std::vector<std::function<int()>> actions;
  std::vector<CLI::App*> subcommands;
  for (const Command& command : commands) {
    CLI::App* sub = app.add_subcommand(std::string(command.name), std::string(command.help));
    subcommands.push_back(sub);
    actions.push_back(command.setup(*sub, globals));
  }
  refuse_negative_counts(app);
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
    const bool known = std::any_of(commands.begin(), commands.end(),
                                   [&](const Command& command) { return command.name == first; });
    if (!first.empty() && first.front() != '-' && !known) {
      std::cerr << "headroom: unknown command '" << first << "'\n";
    } else {
      std::cerr << "headroom: " << error.what() << "\n";
    }
    std::cerr << kUsageHint << "\n";
    return kExitUsage;
  }
  if (auto checked = check_host_root(globals.root); !checked) {
    return usage_error(checked.error().message);
  }
  for (std::size_t i = 0; i < subcommands.size(); ++i) {
    if (subcommands[i]->parsed()) return actions[i]();
  }
  return kExitUsage;
}

}  // namespace

int run_app(int argc, char** argv, std::span<const Command> commands) {
  try {
    return run_parsed(argc, argv, commands);
  } catch (const std::exception& error) {
    std::cerr << "headroom: internal error: " << error.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace headroom::cli
