#pragma once
// The subcommand table (ninja's tool table) and what every subcommand shares.

#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "core/context.h"
#include "core/error.h"
#include "core/report/text.h"

namespace headroom::cli {

/// Exit codes shared by every subcommand (documented in README and docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,        ///< nothing reached the failure threshold
  kExitFindings = 1,  ///< a finding reached --fail-on (or: explain found no cause)
  kExitUsage = 2,     ///< bad arguments, or something could not run at all
};

/// Options of the main program that every subcommand sees.
struct Globals {
  bool json = false;
  bool no_color = false;
  bool verbose = false;
  std::string root = "/";  ///< hidden --root: read /proc, /sys, /dev from a fixture tree
  char** argv = nullptr;   ///< the program's own argv (watch re-executes it as headroom-watch)
};

/// One subcommand: adds its options to `app` and returns the action that runs it.
struct Command {
  std::string_view name;
  std::string_view help;
  std::function<int()> (*setup)(CLI::App& app, const Globals& globals);
};

/// The context of the live host (or --root), with this process's environment and cwd.
[[nodiscard]] Context make_context(const Globals& globals);
/// Text style for stdout: colour only on a terminal, never with NO_COLOR or --no-color.
[[nodiscard]] TextStyle stdout_style(const Globals& globals);
/// The same decision for stderr.
[[nodiscard]] bool stderr_color(const Globals& globals);
/// Prints "headroom: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message);

// The subcommands, one file each.
std::function<int()> setup_check(CLI::App& app, const Globals& globals);
std::function<int()> setup_who(CLI::App& app, const Globals& globals);
std::function<int()> setup_clean(CLI::App& app, const Globals& globals);
std::function<int()> setup_run(CLI::App& app, const Globals& globals);
std::function<int()> setup_du(CLI::App& app, const Globals& globals);
std::function<int()> setup_prune(CLI::App& app, const Globals& globals);
std::function<int()> setup_watch(CLI::App& app, const Globals& globals);
std::function<int()> setup_explain(CLI::App& app, const Globals& globals);

}  // namespace headroom::cli
