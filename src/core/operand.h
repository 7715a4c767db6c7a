#pragma once
// A path given on the command line (du, who, prune): made absolute against the caller's
// working directory and, like `du -H` and fuser, resolved when it is or goes through a
// symlink. Symlinks met inside a walk are never followed; only the operand is resolved.

#include <filesystem>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

struct Operand {
  std::filesystem::path given;  ///< absolute, normalized, as typed (no trailing slash)
  std::filesystem::path path;   ///< every symlink resolved: what is examined
  [[nodiscard]] bool followed() const { return given != path; }
  /// "outputs -> /scratch/run7/outputs" when a symlink was followed, else "".
  [[nodiscard]] std::string note() const;
};

/// `text` as an operand; an empty `text` is the working directory. Fails like stat(2)
/// (ENOENT, EACCES, ELOOP), naming the component that failed.
[[nodiscard]] Result<Operand> resolve_operand(const Context& context, const std::string& text);

/// The directories a job writes to (check's --dir, the Python module's dirs=): each made
/// absolute against `working_directory` and normalized, and each a directory (a symlink to
/// one counts). None given: the working directory. An error names the entry as given:
/// "ckpt: No such file or directory" (kNotFound, kPermissionDenied...), "run.log: not a
/// directory" (kInvalidArgument); fronts put their flag or argument name before it.
[[nodiscard]] Result<std::vector<std::filesystem::path>> resolve_job_dirs(
    const std::vector<std::string>& dirs, const std::filesystem::path& working_directory);

}  // namespace headroom
