#pragma once
// How a process's death by a signal is reported, and what each signal says about
// the cause. Whoever saw the death words it their own way (messages.md §0, §11):
// glibc's strsignal ("Killed", "Bus error"), zsh's lower case ("killed", "bus error"),
// Python's negative return codes (-9), Signals enums (SIGKILL), shells' and container
// runtimes' exit status 128+N (137), and a launcher's sys.exit(-N) (256-N: DeepSpeed's 247).

#include <optional>
#include <string_view>

namespace headroom {

/// The signal number a report names: "Killed", "killed", "SIGKILL", "KILL", "Signals.SIGKILL",
/// "9", "-9" (Python's returncode), "Kill signal". nullopt when it names no signal.
[[nodiscard]] std::optional<int> signal_number(std::string_view text);

/// The signal an exit status means: 128+N from a shell, docker or Kubernetes (N in 1..31), or
/// 256-N from a Python launcher's sys.exit(-N) for SIGKILL and SIGBUS (247, 249).
/// nullopt for an ordinary status (1, 2, 127).
[[nodiscard]] std::optional<int> signal_from_status(int status);

}  // namespace headroom
