#pragma once
// The temp dir Python's tempfile (and so multiprocessing and PyTorch) will use.
// Source: CPython Lib/tempfile.py, _candidate_tempdir_list() and
// _get_default_tempdir() (https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir).
// Quirks reproduced here: candidates are $TMPDIR, $TEMP, $TMP (when set and not
// empty), then /tmp, /var/tmp, /usr/tmp, then the working directory; a
// candidate is used only when a file can be created in it with
// O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW AND b"blat" written to it (on a tmpfs full in
// blocks only the create succeeds and the write fails with ENOSPC); any error
// other than EEXIST skips the candidate silently. multiprocessing then makes
// "<tempdir>/pymp-XXXXXXXX" and binds "listener-XXXXXXXX" inside it, and
// CPython refuses AF_UNIX paths of 108 bytes or more ("AF_UNIX path too long").

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"

namespace headroom {

/// One directory tempfile would try, in its order.
struct TempdirCandidate {
  std::string listed;  ///< as Python lists it in its error message ("$TMPDIR" value, "/tmp")
  std::filesystem::path path;  ///< absolute host path (os.path.abspath of `listed`)
  std::string origin;          ///< "TMPDIR", "TEMP", "TMP", "default" or "cwd"
};

/// What happened when a candidate was tried the way tempfile tries it.
struct CandidateOutcome {
  TempdirCandidate candidate;
  int error = 0;     ///< errno of the failing step; 0: usable
  std::string step;  ///< "create", "write", "close" or "unlink" when error != 0

  [[nodiscard]] bool usable() const { return error == 0; }
  /// "No space left on device (errno 28) writing a test file", or "usable".
  [[nodiscard]] std::string describe() const;
};

/// The candidates and the one Python picks.
struct TempdirResolution {
  std::vector<TempdirCandidate> candidates;  ///< all of them, in order
  std::vector<CandidateOutcome> tried;       ///< up to and including the chosen one
  /// The dir tempfile.gettempdir() returns; nullopt: none is usable.
  [[nodiscard]] std::optional<TempdirCandidate> chosen() const;
  /// Python's own error when none is usable:
  /// "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '/work']".
  [[nodiscard]] std::string python_error() const;
};

/// The candidate list of tempfile._candidate_tempdir_list() for the context's
/// environment and working directory. Pure.
[[nodiscard]] std::vector<TempdirCandidate> tempdir_candidates(const Context& context);
/// Tries one candidate exactly as _get_default_tempdir() does (create a random
/// name, write b"blat", close, unlink), under the context's root.
[[nodiscard]] CandidateOutcome try_tempdir(const SysRoot& root, const TempdirCandidate& candidate);
/// Tries the candidates in order and stops at the first usable one, as Python does.
[[nodiscard]] TempdirResolution resolve_tempdir(const Context& context);

/// Bytes of the AF_UNIX path multiprocessing binds in `tempdir`:
/// "<tempdir>/pymp-XXXXXXXX/listener-XXXXXXXX".
[[nodiscard]] std::size_t multiprocessing_socket_path_length(const std::filesystem::path& tempdir);
/// The longest AF_UNIX path CPython binds on Linux (sun_path is 108 bytes with its NUL).
constexpr std::size_t kMaxUnixSocketPath = 107;

/// What happened when a pymp-like dir, a file and a listening socket were made.
struct SocketProbe {
  std::size_t python_path_length = 0;  ///< length multiprocessing's own path would have
  int error = 0;                       ///< errno of the failing step; 0: all worked
  std::string step;                    ///< "mkdir", "write", "socket", "bind", "listen", "length"
  [[nodiscard]] bool ok() const { return error == 0; }
};

/// In `tempdir` (a host path, re-rooted through `root`), creates a private
/// "headroom-XXXX" dir (as long as "pymp-XXXXXXXX"), writes a file in it, binds
/// and listens on an AF_UNIX socket "listener-XXXXXXXX" inside, then removes
/// all of it. Mirrors multiprocessing.util.get_temp_dir() plus Listener().
[[nodiscard]] SocketProbe probe_multiprocessing_socket(const SysRoot& root,
                                                       const std::filesystem::path& tempdir);

}  // namespace headroom
