#pragma once
// Starting the job: in its own process group, with headroom's stdin,
// environment and working directory, its stdout/stderr captured.
//
// Output capture, and why two modes:
// - kPipe (headroom's stdout/stderr are not terminals): one pipe per stream, so
//   stdout and stderr stay separate and every byte is passed on unchanged.
// - kTerminal (headroom's stdout, or both, is a terminal): the streams that go
//   to a terminal are a pseudo-terminal, so the job sees isatty() == true just
//   like when run directly: tqdm redraws its bar, colours stay on. The pty's
//   output processing (OPOST) is off, so the bytes headroom reads are the bytes
//   the job wrote; the user's terminal applies its own newline translation.
//   The job is a session leader with the pty as its controlling terminal.

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace headroom {

/// How the job's output reaches headroom.
enum class CaptureMode { kPipe, kTerminal };

struct SpawnOptions {
  std::vector<std::string> argv;
  bool stdout_terminal = false;  ///< headroom's stdout is a terminal: give the job a pty
  bool stderr_terminal = false;  ///< headroom's stderr is a terminal: give the job a pty
  int terminal_fd = -1;          ///< terminal whose size and modes the pty copies
  /// headroom's stdin is the foreground terminal: in pipe mode the job's group
  /// becomes the terminal's foreground group so it can read it (and gets ^C directly).
  bool hand_over_foreground = false;
  /// Signals the job keeps ignored (SIG_IGN) instead of resetting to default:
  /// what headroom itself inherited ignored (`nohup`, a shell's background job).
  std::vector<int> ignored_signals;
};

/// The signals whose disposition is SIG_IGN in this process now. Call it before
/// headroom installs any handling of its own, so it reads what the user's shell,
/// nohup or parent process set up (execve keeps SIG_IGN, resets handlers).
[[nodiscard]] std::vector<int> inherited_ignored_signals();

/// A started job.
struct SpawnedJob {
  pid_t pid = -1;  ///< also its process group id
  CaptureMode mode = CaptureMode::kPipe;
  int stdout_fd = -1;       ///< read end for the job's stdout (pipe or pty master)
  int stderr_fd = -1;       ///< read end for its stderr; -1 when it shares the pty with stdout
  int pty_master = -1;      ///< the pty master, when mode is kTerminal
  bool foreground = false;  ///< the job's group was made the terminal's foreground group
};

/// Forks and execs argv[0] (PATH search). The calling thread's signal mask is
/// reset to empty in the job, and every signal disposition to default except
/// `ignored_signals`, which stay ignored (as they would without headroom).
/// An exec failure is an Error whose code is kNotFound (exit 127) or
/// kPermissionDenied (exit 126), like a shell.
[[nodiscard]] Result<SpawnedJob> spawn_job(const SpawnOptions& options);

/// Copies the window size of `terminal_fd` to the job's pty (after SIGWINCH).
void copy_window_size(int terminal_fd, int pty_master);
/// Gives the terminal back to headroom's process group after a foreground hand-over.
void take_back_foreground(int terminal_fd);

}  // namespace headroom
