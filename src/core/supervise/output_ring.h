#pragma once
// The last bytes of the job's output, kept in memory for the post-mortem: the
// traceback that explains a death is at the end, and a job may print for days.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// A fixed-capacity byte ring: appending never allocates after construction.
class OutputRing {
 public:
  explicit OutputRing(std::size_t capacity);

  /// Appends bytes; when full, the oldest bytes are overwritten.
  void append(std::string_view bytes);
  /// The kept bytes, oldest first.
  [[nodiscard]] std::string contents() const;
  /// Bytes appended over the whole life of the ring.
  [[nodiscard]] std::uint64_t total_bytes() const { return total_; }
  /// True when older output was dropped.
  [[nodiscard]] bool truncated() const { return total_ > size_; }

 private:
  std::vector<char> buffer_;
  std::size_t start_ = 0;  ///< index of the oldest byte
  std::size_t size_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace headroom
