#include "core/supervise/output_ring.h"

#include <algorithm>
#include <cstring>

namespace headroom {

OutputRing::OutputRing(std::size_t capacity) : buffer_(std::max<std::size_t>(capacity, 1)) {}

void OutputRing::append(std::string_view bytes) {
  const std::lock_guard lock(mutex_);
  total_.store(total_.load(std::memory_order_relaxed) + bytes.size(), std::memory_order_release);
  const std::size_t capacity = buffer_.size();
  if (bytes.size() >= capacity) {
    // Only the tail of this chunk survives.
    std::memcpy(buffer_.data(), bytes.data() + (bytes.size() - capacity), capacity);
    start_ = 0;
    size_ = capacity;
    return;
  }
  const std::size_t end = (start_ + size_) % capacity;
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

std::string OutputRing::copy_newest(std::size_t count) const {
  count = std::min(count, size_);
  const std::size_t begin = (start_ + (size_ - count)) % buffer_.size();
  std::string out;
  out.reserve(count);
  const std::size_t first = std::min(count, buffer_.size() - begin);
  out.append(buffer_.data() + begin, first);
  out.append(buffer_.data(), count - first);
  return out;
}

std::string OutputRing::contents() const {
  const std::lock_guard lock(mutex_);
  return copy_newest(size_);
}

std::string OutputRing::last(std::size_t count) const {
  const std::lock_guard lock(mutex_);
  return copy_newest(count);
}

}  // namespace headroom
