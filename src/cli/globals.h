#pragma once
// What every subcommand shares, without the argument parser: exit codes, the
// global options and the helpers built on them. headroom-watch includes only
// this (its flags are parsed by watch_args.h, not CLI11); command.h adds the
// CLI11 subcommand table for headroom.

#include <string>
#include <string_view>

#include "core/context.h"
#include "core/report/style.h"

namespace headroom::cli {

/// Exit codes shared by every subcommand (documented in README and docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,        ///< nothing reached the failure threshold
  kExitFindings = 1,  ///< a finding reached --fail-on (or: explain found no cause)
  kExitUsage = 2,     ///< bad arguments, or something could not run at all
};

/// The line after a usage error, the same for every command (watch included).
inline constexpr std::string_view kUsageHint =
    "Run 'headroom --help' or 'headroom <command> --help' for usage.";

/// Options of the main program that every subcommand sees.
struct Globals {
  bool json = false;
  bool no_color = false;
  bool verbose = false;
  std::string root = "/";  ///< --host-root (hidden alias --root): the host's / mounted here
  int argc = 0;            ///< the program's own argv (watch re-reads it, see watch_args.h)
  char** argv = nullptr;
};

/// The context of the live host (or --root), with this process's environment and cwd.
[[nodiscard]] Context make_context(const Globals& globals);
/// Text style for stdout: colour only on a terminal, never with NO_COLOR or --no-color.
[[nodiscard]] TextStyle stdout_style(const Globals& globals);
/// The same decision for stderr.
[[nodiscard]] bool stderr_color(const Globals& globals);
/// --host-root must name a directory (a typo would read nothing and say little).
[[nodiscard]] Result<void> check_host_root(const std::string& root);
/// Prints "headroom: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message);

}  // namespace headroom::cli
