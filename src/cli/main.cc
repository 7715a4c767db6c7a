// headroom: parses argv, picks the subcommand from the table, returns its exit code.

#include <sys/auxv.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "cli/app.h"
#include "cli/watch_args.h"

namespace headroom::cli {
namespace {

/// `headroom watch` becomes headroom-watch, the same command built alone, when
/// that binary sits next to this one (as the build and `cmake --install` put
/// it): a daemon that runs for weeks then maps only the watch code, not every
/// command's (bench/RESULTS-watch.md). The same argv is passed on, so ps still
/// shows "headroom watch ...". Without the sibling, watch runs in this process.
int route_watch(int argc, char** argv) {
  // getauxval returns the address as an integer; NOLINTNEXTLINE(performance-no-int-to-ptr)
  const auto* executable = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  std::error_code error;
  const std::filesystem::path self =
      executable != nullptr ? std::filesystem::canonical(executable, error) : "";
  if (!self.empty() && !error) {
    const std::filesystem::path lean = self.parent_path() / "headroom-watch";
    ::execv(lean.c_str(), argv);  // returns only when it cannot run
  }
  return watch_main(argc, argv);
}

/// Whether argv names the watch command: its first word that is not a global
/// flag (--host-root and its alias --root are the global flags with a separate value). watch parses
/// its own flags, globals included (watch_args.h), so CLI11 never sees them.
bool names_watch(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") return false;
    if (word == "--host-root" || word == "--root") {
      ++i;
      continue;
    }
    if (!word.starts_with('-')) return word == "watch";
  }
  return false;
}

/// The table entry lists watch in `headroom --help`; main() has already routed
/// every argv that names it.
std::function<int()> setup_watch_entry(CLI::App&, const Globals& globals) {
  return [&globals] { return route_watch(globals.argc, globals.argv); };
}

constexpr std::array kCommands = {
    Command{"check", "preflight: find every host resource that would kill a training job",
            setup_check},
    Command{"who", "which processes hold files at or under a path (open, mapped, deleted)",
            setup_who},
    Command{"clean",
            "reclaim stale /dev/shm segments and old unused temp files (plan unless --yes)",
            setup_clean},
    Command{"run", "supervise a training command: warn before the host runs out, say why it died",
            setup_run},
    Command{"du", "the largest entries under a path: size, files, age, owner, and who holds them",
            setup_du},
    Command{
        "prune",
        "checkpoint retention: keep the last/best/every-K, delete the rest (dry run unless --yes)",
        setup_prune},
    Command{"watch",
            "monitor disks, /dev/shm and memory: time-to-full, alerts, Prometheus /metrics",
            setup_watch_entry},
    Command{"explain", "read a failed job's log: name the root cause, with evidence and the fix",
            setup_explain},
};

}  // namespace
}  // namespace headroom::cli

int main(int argc, char** argv) {
  if (headroom::cli::names_watch(argc, argv)) return headroom::cli::route_watch(argc, argv);
  return headroom::cli::run_app(argc, argv, headroom::cli::kCommands);
}
