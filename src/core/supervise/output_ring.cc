#include "core/supervise/output_ring.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace headroom {

OutputRing::OutputRing(std::size_t capacity) : buffer_(std::max<std::size_t>(capacity, 1)) {}

void OutputRing::append(std::string_view bytes) {
  const std::lock_guard lock(mutex_);
  settle();  // these bytes come after everything held
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

void OutputRing::advance(std::size_t count) const {
  const std::size_t capacity = buffer_.size();
  const std::size_t grown = size_ + count;
  if (grown > capacity) {
    start_ = (start_ + (grown - capacity)) % capacity;
    size_ = capacity;
  } else {
    size_ = grown;
  }
}

namespace {

// Each held pipe asks for 1 MiB (pipe-max-size's default); one under 256 KiB (the
// user's pipe pages exhausted) is not worth holding: the ring then reads.
constexpr int kHeldPipeBytes = 1 << 20;
constexpr int kHeldPipeMinimum = 256 << 10;
constexpr std::size_t kHeldPipesMaximum = 64;

}  // namespace

std::size_t OutputRing::held_bytes() const {
  const std::lock_guard lock(mutex_);
  return held_bytes_;
}

std::size_t OutputRing::read_into_memory(int fd, std::size_t count) const {
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
  return appended;
}

bool OutputRing::open_held() {
  if (!held_.empty()) return true;
  if (held_failed_) return false;
  held_failed_ = true;  // until the chain is complete
  null_ = UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!null_.ok()) return false;
  // Enough pipes that all but one hold the capacity when their pages are full.
  std::size_t total = 0;
  std::size_t largest = 0;
  std::vector<HeldPipe> chain;
  while (chain.size() < 2 || total < buffer_.size() + largest) {
    if (chain.size() == kHeldPipesMaximum) return false;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    HeldPipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1]), 0};
    const int size = ::fcntl(fds[1], F_SETPIPE_SZ, kHeldPipeBytes);
    if (size < kHeldPipeMinimum) return false;
    total += static_cast<std::size_t>(size);
    largest = std::max(largest, static_cast<std::size_t>(size));
    chain.push_back(std::move(pipe));
  }
  held_ = std::move(chain);
  first_ = 0;
  used_ = 1;
  held_failed_ = false;
  return true;
}

void OutputRing::rotate() {
  if (used_ < held_.size()) {  // the next pipe is empty: it becomes the newest
    ++used_;
    return;
  }
  // Every pipe is in use: the oldest is emptied and becomes the newest.
  HeldPipe& oldest = held_[first_];
  std::size_t left = oldest.bytes;
  if (held_bytes_ - oldest.bytes >= buffer_.size()) {
    // The newer pipes hold the whole capacity: these bytes and memory's are older still.
    while (left > 0) {
      const ssize_t dropped = ::splice(oldest.read.get(), nullptr, null_.get(), nullptr, left,
                                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (dropped < 0 && errno == EINTR) continue;
      if (dropped <= 0) break;
      left -= static_cast<std::size_t>(dropped);
    }
    start_ = 0;
    size_ = 0;
  }
  if (left > 0) read_into_memory(oldest.read.get(), left);
  held_bytes_ -= oldest.bytes;
  oldest.bytes = 0;
  first_ = (first_ + 1) % held_.size();
}

void OutputRing::settle() const {
  for (std::size_t i = 0; i < used_; ++i) {
    HeldPipe& pipe = held_[(first_ + i) % held_.size()];
    if (pipe.bytes > 0) read_into_memory(pipe.read.get(), pipe.bytes);
    pipe.bytes = 0;
  }
  held_bytes_ = 0;
  if (used_ > 0) {
    first_ = (first_ + used_ - 1) % held_.size();
    used_ = 1;
  }
}

std::size_t OutputRing::append_from(int fd, std::size_t count) {
  const std::lock_guard lock(mutex_);
  std::size_t appended = 0;
  if (open_held()) {
    bool rotated = false;
    while (appended < count) {
      HeldPipe& newest = held_[(first_ + used_ - 1) % held_.size()];
      const ssize_t moved = ::splice(fd, nullptr, newest.write.get(), nullptr, count - appended,
                                     SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (moved > 0) {
        newest.bytes += static_cast<std::size_t>(moved);
        held_bytes_ += static_cast<std::size_t>(moved);
        appended += static_cast<std::size_t>(moved);
        rotated = false;
        continue;
      }
      if (moved < 0 && errno == EINTR) continue;
      // The newest pipe is full; a fresh one refusing too means `fd` has nothing more now.
      if (moved < 0 && errno == EAGAIN && !rotated) {
        rotate();
        rotated = true;
        continue;
      }
      if (moved < 0 && errno != EAGAIN) {
        // Not a pipe (or splice refused): what is left is read. Memory must stay the older part.
        settle();
        appended += read_into_memory(fd, count - appended);
      }
      break;
    }
  } else {
    appended = read_into_memory(fd, count);
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
  settle();
  if (size_ == 0 || buffer_[(start_ + size_ - 1) % buffer_.size()] == '\n') return;
  buffer_[(start_ + size_) % buffer_.size()] = '\n';
  advance(1);
}

std::string OutputRing::contents() const {
  const std::lock_guard lock(mutex_);
  settle();
  return copy_newest(size_);
}

std::string OutputRing::last(std::size_t count) const {
  const std::lock_guard lock(mutex_);
  settle();
  return copy_newest(count);
}

}  // namespace headroom
