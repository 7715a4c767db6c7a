#pragma once
// A writable copy of a fixture tree for tests whose probes create files (the
// temp dir probes write, bind and remove a socket), made under the test's
// working directory (the build tree), never under the host's /tmp.

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <system_error>

#include "core/fixture_context.h"

namespace headroom::testing {

/// Copies tests/fixtures/<scenario> (or nothing, for "") to a fresh dir; removed on destruction.
class ScratchRoot {
 public:
  explicit ScratchRoot(std::string_view scenario = "") {
    std::random_device random;
    path_ = std::filesystem::current_path() / ("scratch-root-" + std::to_string(random()));
    std::filesystem::create_directories(path_);
    if (!scenario.empty()) {
      std::filesystem::copy(
          fixture_path(scenario), path_,
          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    }
  }
  ~ScratchRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// A Context rooted here, with `syscalls`.
  [[nodiscard]] Context context(const Syscalls& syscalls) const {
    Context context;
    context.root = SysRoot(path_);
    context.syscalls = &syscalls;
    return context;
  }
  /// Number of entries in the host path `dir` under this root (to see that probes clean up).
  [[nodiscard]] std::size_t entries(const std::filesystem::path& dir) const {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator(SysRoot(path_).host(dir))) {
      ++count;
    }
    return count;
  }

 private:
  std::filesystem::path path_;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// FsStats of a filesystem of `total` bytes with `avail` free and `free_inodes` of `inodes`.
inline FsStats fs_stats(std::uint64_t total, std::uint64_t avail, std::uint64_t inodes = 100000,
                        std::uint64_t free_inodes = 90000) {
  FsStats stats;
  stats.total_bytes = total;
  stats.free_bytes = avail;
  stats.avail_bytes = avail;
  stats.total_inodes = inodes;
  stats.free_inodes = free_inodes;
  return stats;
}

}  // namespace headroom::testing
