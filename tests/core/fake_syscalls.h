#pragma once
// A hand-written fake of core/syscalls.h for tests: statvfs answers come from
// a map of path prefixes (the longest prefix wins), the clocks and identity are
// plain settable fields.

#include <map>
#include <string>

#include "core/syscalls.h"

namespace headroom::testing {

/// Syscalls with canned answers. Paths are compared as given (rooted paths in fixture tests).
class FakeSyscalls final : public Syscalls {
 public:
  /// statvfs of any path under `prefix` returns `stats` (the longest matching prefix wins).
  FakeSyscalls& set_fs(const std::filesystem::path& prefix, FsStats stats) {
    filesystems_[prefix.lexically_normal().string()] = stats;
    return *this;
  }

  [[nodiscard]] Result<FsStats> statvfs(const std::filesystem::path& path) const override {
    const std::string wanted = path.lexically_normal().string();
    const FsStats* best = nullptr;
    std::size_t best_length = 0;
    for (const auto& [prefix, stats] : filesystems_) {
      const bool under =
          wanted.compare(0, prefix.size(), prefix) == 0 &&
          (wanted.size() == prefix.size() || prefix.back() == '/' || wanted[prefix.size()] == '/');
      if (under && (best == nullptr || prefix.size() >= best_length)) {
        best = &stats;
        best_length = prefix.size();
      }
    }
    if (best == nullptr)
      return fail(Error{Error::Code::kNotFound, wanted + ": no fake filesystem"});
    return *best;
  }
  [[nodiscard]] std::chrono::system_clock::time_point now() const override { return now_; }
  [[nodiscard]] std::chrono::steady_clock::time_point monotonic() const override {
    return monotonic_;
  }
  [[nodiscard]] Result<Limit> open_files_limit() const override { return nofile_; }
  [[nodiscard]] uid_t effective_uid() const override { return uid_; }
  /// What the kernel would answer for a fixture's files, which no real process holds:
  /// granted. Asked of the real kernel, tests running side by side over one tree would
  /// refuse each other's leases (the probe holds the file open).
  [[nodiscard]] LeaseAnswer write_lease(int /*fd*/) const override { return lease_; }
  /// Likewise: no fixture file is open for writing.
  [[nodiscard]] LeaseAnswer read_lease(int /*fd*/) const override { return read_lease_; }

  std::chrono::system_clock::time_point now_{std::chrono::seconds(1'700'000'000)};
  std::chrono::steady_clock::time_point monotonic_{};
  Limit nofile_{1024, 524288};
  uid_t uid_ = 0;
  LeaseAnswer lease_ = LeaseAnswer::kUnused;
  LeaseAnswer read_lease_ = LeaseAnswer::kUnused;

 private:
  std::map<std::string, FsStats> filesystems_;
};

}  // namespace headroom::testing
