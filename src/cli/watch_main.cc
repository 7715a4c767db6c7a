// headroom-watch: `headroom watch` built alone. The daemon runs for weeks on
// every host of a fleet, so it links only the watch code and what it uses (no
// CLI11, explain catalog, RE2, run, du, ...), built for size (src/cli/
// CMakeLists.txt); `headroom watch` re-executes into it (main.cc). Same flags,
// same output, same exit codes as `headroom watch`; the word `watch` is optional.

#include "cli/watch_args.h"

int main(int argc, char** argv) { return headroom::cli::watch_main(argc, argv); }
