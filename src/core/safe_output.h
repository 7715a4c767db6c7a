#pragma once
// Opening a file headroom writes to, often as root, in a directory other users
// may be able to write: `run --log` (and its rotated files), `run --report`, the
// watch daemon's JSON-lines alert sink. The one rule for all of them:
//
// - The directory is opened once and every later step is relative to that fd
//   (openat, renameat, fstatat), so a directory swapped for a symlink after it
//   was opened cannot redirect a write, a rotation or a create.
// - The last component is never followed (O_NOFOLLOW): a planted
//   `job.log -> /etc/passwd` is refused, not appended to.
// - Only a regular file is written, opened O_NONBLOCK so a FIFO planted at the
//   path cannot block (no reader: ENXIO; a reader: refused after fstat).
// - An existing file must have one link (a hard link to /etc/shadow has two)
//   and belong to the effective user: another user's file is not written into.
// - A created file gets the mode asked for (0600 or 0640, minus the umask),
//   never a world-readable default.
// - Truncation happens after those checks (ftruncate), never by O_TRUNC.
// The checks run on the opened fd (fstat), so a swap between check and open is
// caught; a pre-check with fstatat spares opening a device node at all.

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/unique_fd.h"

namespace headroom {

/// What to do with the file when it already exists.
enum class ExistingFile {
  kAppend,    ///< write at its end (O_APPEND)
  kTruncate,  ///< empty it, after the checks
  kRefuse,    ///< it must not exist (O_EXCL): a new file or an error
};

/// Opens a directory for later *at calls; follows symlinks in `dir` as named
/// by the user, once. Errors name the directory.
[[nodiscard]] Result<UniqueFd> open_output_dir(const std::filesystem::path& dir);

/// Opens `name` (one component, no '/') in `dir_fd` for writing by the rules
/// above. `shown` is the path used in error messages. A refusal is an Error of
/// code kPermissionDenied whose message says why and what to do.
[[nodiscard]] Result<UniqueFd> open_output_at(int dir_fd, const std::string& name,
                                              ExistingFile existing, mode_t create_mode,
                                              const std::filesystem::path& shown);

/// Whether `name` in `dir_fd` could be opened by open_output_at without creating
/// it: absent, or a regular file that passes the checks. For output written only
/// at the end of a run (--report): refuse before the job starts, not after.
[[nodiscard]] Result<void> check_output_at(int dir_fd, const std::string& name,
                                           const std::filesystem::path& shown);

/// Writes all of `bytes` to `fd` (again after EINTR and short writes); an error names
/// `shown` ("<shown>: No space left on device" when the disk took nothing more).
[[nodiscard]] Result<void> write_all(int fd, std::string_view bytes,
                                     const std::filesystem::path& shown);

/// open_output_dir of the path's directory ("." when it has none), then open_output_at.
[[nodiscard]] Result<UniqueFd> open_output(const std::filesystem::path& path, ExistingFile existing,
                                           mode_t create_mode);

/// The same inode (device and inode number): whether `name` in `dir_fd` is still
/// the file open as `fd` (a rotation renames only its own file).
[[nodiscard]] bool names_open_file(int dir_fd, const std::string& name, int fd);

}  // namespace headroom
