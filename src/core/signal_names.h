#pragma once
// Signal names both ways, for `run --on-critical SIGUSR1`, its notices and the
// post-mortem ("killed by SIGKILL"). glibc's sigabbrev_np(3) knows every
// standard name; real-time signals have none and are shown by number.

#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// "SIGKILL" for 9; "signal 64" when it has no name.
[[nodiscard]] std::string signal_name(int signal);
/// 10 for "SIGUSR1", "usr1" or "10"; an Error naming the text otherwise.
[[nodiscard]] Result<int> parse_signal(std::string_view text);

}  // namespace headroom
