#pragma once
// Pseudo-files kept open between samples. A watch reads the same dozen files
// of /proc, /sys and cgroupfs every few seconds; reopening each costs a path
// walk per component, which was most of a sample's kernel time. The kernel
// regenerates a seq_file (procfs) or kernfs file (sysfs, cgroupfs) on every
// read from offset 0, so one fd read with pread(…, 0) sees fresh content.
// Regular files (fixture trees) are never kept: they may be replaced.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "core/error.h"
#include "core/sys_root.h"
#include "core/unique_fd.h"

namespace headroom {

/// Reads a kept fd's file whole with pread from offset 0 (at most `limit`
/// bytes, appended to `content`); 0, or the errno of the failed read. `expected`: the size
/// the caller expects (each read asks for that much until one fills it), 0 for unknown.
[[nodiscard]] int read_from_start(int fd, std::size_t limit, std::string& content,
                                  std::size_t expected = 0, FileEnd end = FileEnd::kEmptyRead);

/// Open fds of pseudo-files by path. Not thread-safe: one sampler owns it.
class OpenFiles {
 public:
  /// The whole file (at most `limit` bytes), read through a kept fd when it is a pseudo-file.
  [[nodiscard]] Result<std::string> read(const std::filesystem::path& path, std::size_t limit,
                                         FileEnd end = FileEnd::kEmptyRead);
  /// Number of fds kept (tests).
  [[nodiscard]] std::size_t size() const { return files_.size(); }

 private:
  struct KeptFile {
    UniqueFd fd;
    std::size_t last_size = 0;  ///< what the last read returned
  };
  std::map<std::string, KeptFile, std::less<>> files_;
};

/// While alive, SysRoot::read on this thread goes through `files`.
class ScopedOpenFiles {
 public:
  explicit ScopedOpenFiles(OpenFiles* files);
  ~ScopedOpenFiles();
  ScopedOpenFiles(const ScopedOpenFiles&) = delete;
  ScopedOpenFiles& operator=(const ScopedOpenFiles&) = delete;

 private:
  OpenFiles* previous_;
};

/// The OpenFiles of this thread's current scope, or null.
[[nodiscard]] OpenFiles* current_open_files();

}  // namespace headroom
