#pragma once
// The subcommand table of headroom (ninja's tool table), parsed with CLI11.
// What every subcommand shares is in globals.h; watch parses its own flags
// (watch_args.h) so that headroom-watch does not link CLI11.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "cli/globals.h"
#include "core/error.h"

namespace headroom::cli {

/// One subcommand: adds its options to `app` and returns the action that runs it.
struct Command {
  std::string_view name;
  std::string_view help;
  std::function<int()> (*setup)(CLI::App& app, const Globals& globals);
};

// The subcommands, one file each.
std::function<int()> setup_check(CLI::App& app, const Globals& globals);
std::function<int()> setup_who(CLI::App& app, const Globals& globals);
std::function<int()> setup_clean(CLI::App& app, const Globals& globals);
std::function<int()> setup_run(CLI::App& app, const Globals& globals);
std::function<int()> setup_du(CLI::App& app, const Globals& globals);
std::function<int()> setup_prune(CLI::App& app, const Globals& globals);
std::function<int()> setup_explain(CLI::App& app, const Globals& globals);

}  // namespace headroom::cli
