#pragma once
// A sampled-window literal prefilter: finds every occurrence of a set of
// literals in a block while looking at only one 4-byte window every `stride`
// bytes. Any occurrence of a literal of length L >= 4 + stride - 1 fully
// contains one sampled window, so probing the windows at multiples of the
// stride against a bitmap of all the literals' windows misses nothing; a hit is
// then verified with memcmp. The common log line costs a few probes, which is
// what lets explain scan several GB/s (see bench/RESULTS-explain.md).

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// Finds the occurrences of fixed literals (each at least kWindow bytes) in text blocks.
class LiteralPrefilter {
 public:
  static constexpr std::size_t kWindow = 4;
  /// Longest stride used even when every literal is long: bounds the bitmap's load.
  static constexpr std::size_t kMaxStride = 24;

  LiteralPrefilter() = default;
  /// `literals` must each be at least kWindow bytes long.
  explicit LiteralPrefilter(std::vector<std::string> literals);

  /// Calls on_hit(position, literal_index) for each occurrence (in roughly
  /// ascending order; an occurrence may be reported twice).
  template <typename OnHit>
  void scan(std::string_view block, OnHit&& on_hit) const {
    if (literals_.empty() || block.size() < kWindow) return;
    const char* data = block.data();
    const std::size_t last = block.size() - kWindow;
    for (std::size_t p = 0; p <= last; p += stride_) {
      const std::uint32_t h = hash(data + p);
      if ((bits_[h >> 6] >> (h & 63) & 1) == 0) continue;
      std::uint32_t word = 0;
      std::memcpy(&word, data + p, sizeof word);
      for (std::uint32_t e = bucket_start_[h]; e < bucket_start_[h + 1]; ++e) {
        const auto [window, literal, offset] = entries_[e];
        // Most bitmap hits are hash collisions: compare the window itself before the literal.
        if (window != word || offset > p) continue;
        const std::string& text = literals_[literal];
        const std::size_t at = p - offset;
        if (at + text.size() > block.size()) continue;
        if (std::memcmp(data + at, text.data(), text.size()) == 0) on_hit(at, literal);
      }
    }
  }

  [[nodiscard]] std::size_t stride() const { return stride_; }
  [[nodiscard]] const std::vector<std::string>& literals() const { return literals_; }

 private:
  static std::uint32_t hash(const char* at) {
    std::uint32_t word = 0;
    std::memcpy(&word, at, sizeof word);
    return (word * 2654435761U) >> 16;
  }

 public:
  /// Number of '\n' bytes in [begin, end): the line count, 16 bytes at a time where SSE2 exists.
  static std::size_t count_newlines(const char* begin, const char* end);

 private:
  std::vector<std::string> literals_;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> bucket_start_;
  struct Entry {
    std::uint32_t window;  ///< the 4 bytes of the literal at `offset`
    std::uint32_t literal;
    std::uint32_t offset;
  };
  std::vector<Entry> entries_;
  std::size_t stride_ = 1;
};

}  // namespace headroom
