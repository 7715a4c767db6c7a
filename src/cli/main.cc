// headroom: parses argv, picks the subcommand from the table, returns its exit code.

#include <sys/auxv.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "cli/app.h"

namespace headroom::cli {
namespace {

/// `headroom watch` becomes headroom-watch, the same command built alone, when
/// that binary sits next to this one (as the build and `cmake --install` put
/// it): a daemon that runs for weeks then maps only the watch code, not every
/// command's (1.3 MiB less resident, see bench/RESULTS-watch.md). The same
/// argv is passed on, so ps still shows "headroom watch ...". Without the
/// sibling, watch runs in this process.
std::function<int()> setup_watch_or_exec(CLI::App& app, const Globals& globals) {
  std::function<int()> in_process = setup_watch(app, globals);
  return [in_process, &globals] {
    const auto* executable = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
    std::error_code error;
    const std::filesystem::path self =
        executable != nullptr ? std::filesystem::canonical(executable, error) : "";
    if (!self.empty() && !error && globals.argv != nullptr) {
      const std::filesystem::path lean = self.parent_path() / "headroom-watch";
      ::execv(lean.c_str(), globals.argv);  // returns only when it cannot run
    }
    return in_process();
  };
}

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
            setup_watch_or_exec},
    Command{"explain", "read a failed job's log: name the root cause, with evidence and the fix",
            setup_explain},
};

}  // namespace
}  // namespace headroom::cli

int main(int argc, char** argv) { return headroom::cli::run_app(argc, argv, headroom::cli::kCommands); }
