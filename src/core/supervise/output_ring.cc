#include "core/supervise/output_ring.h"

#include <algorithm>
#include <cstring>

namespace headroom {

OutputRing::OutputRing(std::size_t capacity) : buffer_(std::max<std::size_t>(capacity, 1)) {}

void OutputRing::append(std::string_view bytes) {
  total_ += bytes.size();
  const std::size_t capacity = buffer_.size();
  if (bytes.size() >= capacity) {
    // Only the tail of this chunk survives.
    std::memcpy(buffer_.data(), bytes.data() + (bytes.size() - capacity), capacity);
    start_ = 0;
    size_ = capacity;
    return;
  }
  std::size_t end = (start_ + size_) % capacity;
  const std::size_t first = std::min(bytes.size(), capacity - end);
  std::memcpy(buffer_.data() + end, bytes.data(), first);
  std::memcpy(buffer_.data(), bytes.data() + first, bytes.size() - first);
  const std::size_t grown = size_ + bytes.size();
  if (grown > capacity) {
    start_ = (start_ + (grown - capacity)) % capacity;
    size_ = capacity;
  } else {
    size_ = grown;
  }
}

std::string OutputRing::contents() const {
  std::string out;
  out.reserve(size_);
  const std::size_t first = std::min(size_, buffer_.size() - start_);
  out.append(buffer_.data() + start_, first);
  out.append(buffer_.data(), size_ - first);
  return out;
}

}  // namespace headroom
