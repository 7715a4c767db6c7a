#pragma once
// Helper threads of `headroom run` (the output writers, the --log writer, the
// sampler) must never be the thread a signal for headroom is delivered to: the
// kernel gives a process-directed signal to any thread that does not block it,
// and in a helper thread SIGTERM would take its default action and end headroom
// with the job still running. A thread inherits its creator's mask, so every
// signal is blocked around its creation: it is never unblocked in the thread.

#include <signal.h>

#include <optional>
#include <thread>
#include <utility>

#include "core/threads.h"

namespace headroom {

/// Starts `body` on a new thread in which every signal is blocked from its first
/// instruction; nullopt when the system refuses a thread (core/threads.h). The caller's
/// mask is restored either way.
template <typename Body>
[[nodiscard]] std::optional<std::thread> start_signal_free_thread(Body&& body) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::optional<std::thread> thread = try_start_thread(std::forward<Body>(body));
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace headroom
