#pragma once
// The program around a subcommand table: global flags, parsing, usage errors
// and the exit code, with CLI11. headroom-watch does not use it: watch parses
// its own flags (watch_args.h).

#include <span>

#include "cli/command.h"

namespace headroom::cli {

/// Parses argv against `commands`, runs the chosen one and returns its exit code.
int run_app(int argc, char** argv, std::span<const Command> commands);

}  // namespace headroom::cli
