// headroom-watch: `headroom watch` built alone. The daemon runs for weeks on
// every host of a fleet, so it links only the watch code and what it uses
// (no explain catalog, RE2, run, du, ...); `headroom watch` re-executes into it
// (main.cc). Same flags, same output, same exit codes as `headroom watch`.

#include <array>

#include "cli/app.h"

namespace {

constexpr std::array kWatchOnly = {
    headroom::cli::Command{"watch",
                           "monitor disks, /dev/shm and memory: time-to-full, alerts, Prometheus "
                           "/metrics",
                           headroom::cli::setup_watch},
};

}  // namespace

int main(int argc, char** argv) { return headroom::cli::run_app(argc, argv, kWatchOnly); }
