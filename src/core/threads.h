#pragma once
// Starting a thread where the system may refuse one. std::thread throws std::system_error
// (EAGAIN) under a task limit: ulimit -u, a container's or a Slurm job's pids.max. Those
// limits are what check, explain and run are asked about, so no command may die of one:
// every helper thread of the core is optional, and the work it would do is done on the
// calling thread instead.

#include <optional>
#include <system_error>
#include <thread>
#include <utility>

namespace headroom {

/// A thread running `work`, or nullopt when the system refuses to start one.
template <typename Work>
[[nodiscard]] std::optional<std::thread> try_start_thread(Work&& work) {
  try {
    return std::thread(std::forward<Work>(work));
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

}  // namespace headroom
