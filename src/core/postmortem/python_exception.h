#pragma once
// The last Python exception in a job's output, and which process raised it. A job
// whose own code failed (rank 1 raised ValueError) has no host cause for explain to
// find; the post-mortem then quotes the exception's line and names the process:
// torch.multiprocessing.spawn prints a rank's traceback under "-- Process 1
// terminated with the following error:" (and "process 1 terminated with exit code
// 1" when it died without one), torchrun's log prefix is "[rank1]:", a DataLoader
// worker's traceback is quoted after "Original Traceback (most recent call last):".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// One raised exception, as the output shows it.
struct RaisedException {
  std::uint64_t line = 0;  ///< 1-based line of the exception's line in the output
  std::string text;        ///< "ValueError: bad label 17" (its first line, at most 300 bytes)
  std::string type;        ///< "ValueError" (without the module)
  /// torch.multiprocessing.spawn's index of the process that raised it ("Process 1").
  std::optional<int> process_index;
  std::optional<int> rank;  ///< from a "[rank1]:" line prefix
};

/// The last exception a Python traceback in `output` ends with; nullopt when none.
[[nodiscard]] std::optional<RaisedException> last_python_exception(std::string_view output);

}  // namespace headroom
