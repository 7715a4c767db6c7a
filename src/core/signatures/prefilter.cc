#include "core/signatures/prefilter.h"

#include <algorithm>

namespace headroom {

LiteralPrefilter::LiteralPrefilter(std::vector<std::string> literals)
    : literals_(std::move(literals)), bits_(std::size_t{1} << 10, 0), bucket_start_((1U << 16) + 1, 0) {
  stride_ = kMaxStride;
  for (const std::string& literal : literals_) {
    stride_ = std::min(stride_, literal.size() - kWindow + 1);
  }
  // Counting sort of (hash, literal, offset) into buckets indexed by hash.
  std::vector<std::pair<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>>> all;
  for (std::size_t l = 0; l < literals_.size(); ++l) {
    const std::string& literal = literals_[l];
    for (std::size_t offset = 0; offset + kWindow <= literal.size(); ++offset) {
      const std::uint32_t h = hash(literal.data() + offset);
      all.push_back({h, {static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(offset)}});
      bits_[h >> 6] |= std::uint64_t{1} << (h & 63);
    }
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (const auto& item : all) ++bucket_start_[item.first + 1];
  for (std::size_t h = 1; h < bucket_start_.size(); ++h) bucket_start_[h] += bucket_start_[h - 1];
  entries_.reserve(all.size());
  for (const auto& item : all) entries_.push_back(item.second);
}

}  // namespace headroom
