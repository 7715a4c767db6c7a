#pragma once
// The subcommand table of headroom (ninja's tool table), parsed with CLI11.
// What every subcommand shares is in globals.h; watch parses its own flags
// (watch_args.h) so that headroom-watch does not link CLI11.

#include <CLI/CLI.hpp>
#include <charconv>
#include <functional>
#include <string>
#include <string_view>

#include "cli/globals.h"
#include "core/error.h"

namespace headroom::cli {

/// A process id (> 0), as `--ignore-unreadable` takes them.
inline CLI::Validator pid_validator() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        int pid = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, pid);
        if (error != std::errc() || stop != end || pid <= 0) return value + " is not a pid";
        return "";
      },
      "PID");
}

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
