#include "core/supervise/output_ring.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
  advance(bytes.size());
}

void OutputRing::advance(std::size_t count) {
  const std::size_t capacity = buffer_.size();
  const std::size_t grown = size_ + count;
  if (grown > capacity) {
    start_ = (start_ + (grown - capacity)) % capacity;
    size_ = capacity;
  } else {
    size_ = grown;
  }
}

std::size_t OutputRing::append_from(int fd, std::size_t count) {
  const std::lock_guard lock(mutex_);
  std::size_t appended = 0;
  while (appended < count) {
    // The next contiguous stretch after the newest byte (it overwrites the oldest when full).
    const std::size_t end = (start_ + size_) % buffer_.size();
    const std::size_t room = std::min(count - appended, buffer_.size() - end);
    const ssize_t got = ::read(fd, buffer_.data() + end, room);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    advance(static_cast<std::size_t>(got));
    appended += static_cast<std::size_t>(got);
  }
  total_.store(total_.load(std::memory_order_relaxed) + appended, std::memory_order_release);
  return appended;
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

void OutputRing::end_open_line() {
  const std::lock_guard lock(mutex_);
  if (size_ == 0 || buffer_[(start_ + size_ - 1) % buffer_.size()] == '\n') return;
  buffer_[(start_ + size_) % buffer_.size()] = '\n';
  advance(1);
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
