#include "core/supervise/sink_writer.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>

#include "core/supervise/signal_free_thread.h"

namespace headroom {

struct SinkWriter::State {
  int fd = -1;
  std::size_t capacity = 0;
  std::mutex mutex;
  std::condition_variable wake;      // the writer waits for bytes
  std::condition_variable progress;  // flush waits for the writer
  std::unique_ptr<char[]> ring;      // allocated on the first write, touched as it fills
  std::size_t head = 0;              // first queued byte
  std::size_t size = 0;              // bytes queued, including the span being written
  bool writing = false;
  std::chrono::steady_clock::time_point write_started{};  // of the write in progress
  bool stopping = false;
  SinkStats stats;
};

namespace {

using State = SinkWriter::State;

constexpr std::size_t kMaxWrite = 64 * 1024;

// One blocking write of `length` bytes at `data`; returns bytes written or -errno.
ssize_t write_some(const State& state, const char* data, std::size_t length) {
  for (;;) {
    const ssize_t wrote = ::write(state.fd, data, length);
    if (wrote >= 0) return wrote;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return -errno;
    // Someone else made the shared description non-blocking: wait here instead.
    pollfd room{state.fd, POLLOUT, 0};
    (void)::poll(&room, 1, 200);
  }
}

void writer_loop(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mutex);
  for (;;) {
    state->wake.wait(lock, [&] { return state->stopping || state->size > 0; });
    if (state->stats.abandoned || state->stats.broken) break;
    if (state->size == 0) break;  // stopping, and everything written
    // At most 64 KiB per write(2): a blocking write returns only when all of it
    // is taken, and flush() measures a slow reader's progress by these returns.
    const std::size_t length = std::min({state->size, state->capacity - state->head, kMaxWrite});
    const char* data = state->ring.get() + state->head;
    state->writing = true;
    const auto started = std::chrono::steady_clock::now();
    state->write_started = started;
    lock.unlock();
    const ssize_t wrote = write_some(*state, data, length);
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    lock.lock();
    state->writing = false;
    if (state->stats.abandoned) break;  // flush gave up while this write was stuck
    state->stats.longest_stall = std::max(state->stats.longest_stall, waited);
    std::size_t consumed = wrote > 0 ? static_cast<std::size_t>(wrote) : 0;
    if (wrote > 0) {
      state->stats.written_bytes += consumed;
    } else if (wrote == -EPIPE) {
      // The reader went away: nothing queued can be written any more.
      state->stats.broken = true;
      state->stats.dropped_bytes += state->size;
      consumed = state->size;
    } else {
      // A file that filled up (ENOSPC): this span is lost, later ones may fit.
      state->stats.error = std::strerror(static_cast<int>(-wrote));
      state->stats.dropped_bytes += length;
      consumed = length;
    }
    state->head = (state->head + consumed) % state->capacity;
    state->size -= consumed;
    state->progress.notify_all();
  }
  state->progress.notify_all();
}

}  // namespace

SinkWriter::SinkWriter(int fd, std::size_t capacity) : fd_(fd), state_(std::make_shared<State>()) {
  state_->fd = fd;
  state_->capacity = std::max<std::size_t>(capacity, 1);
  auto state = state_;
  // Detached: a write stuck in the kernel (a reader that never reads) must not
  // hold up headroom's exit; the shared state outlives this object for it.
  auto writer = start_signal_free_thread([state] { writer_loop(state); });
  // Before the job starts (run makes its writers first): the front end reports it.
  if (!writer) throw std::system_error(EAGAIN, std::generic_category(), "output writer thread");
  writer->detach();
}

SinkWriter::~SinkWriter() {
  {
    const std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
}

void SinkWriter::write(std::string_view bytes) {
  if (bytes.empty()) return;
  {
    const std::lock_guard lock(state_->mutex);
    State& state = *state_;
    // Whole chunks or nothing: what the reader gets is the output up to a gap.
    if (state.stats.broken || state.stats.abandoned || state.capacity - state.size < bytes.size()) {
      state.stats.dropped_bytes += bytes.size();
      return;
    }
    if (!state.ring) state.ring.reset(new char[state.capacity]);
    const std::size_t tail = (state.head + state.size) % state.capacity;
    const std::size_t first = std::min(bytes.size(), state.capacity - tail);
    std::memcpy(state.ring.get() + tail, bytes.data(), first);
    std::memcpy(state.ring.get(), bytes.data() + first, bytes.size() - first);
    state.size += bytes.size();
  }
  state_->wake.notify_one();
}

bool SinkWriter::idle() const {
  const std::lock_guard lock(state_->mutex);
  return state_->size == 0 && !state_->writing;
}

namespace {

bool must_wait(const State& state, std::size_t bytes, std::chrono::milliseconds stall) {
  if (state.stats.broken || state.stats.abandoned) return false;
  if (state.capacity - state.size >= std::min(bytes, state.capacity)) return false;
  // A write blocked this long: the reader stopped reading; the job must not wait on it.
  return !(state.writing && std::chrono::steady_clock::now() - state.write_started >= stall);
}

}  // namespace

bool SinkWriter::should_wait(std::size_t bytes, std::chrono::milliseconds stall) const {
  const std::lock_guard lock(state_->mutex);
  return must_wait(*state_, bytes, stall);
}

void SinkWriter::wait_for_room(std::size_t bytes, std::chrono::milliseconds stall,
                               std::chrono::milliseconds limit) const {
  std::unique_lock lock(state_->mutex);
  const auto until = std::chrono::steady_clock::now() + limit;
  while (must_wait(*state_, bytes, stall) && std::chrono::steady_clock::now() < until) {
    // Each write that returns notifies `progress`; a stuck one is seen by the timeout.
    state_->progress.wait_until(lock,
                                std::min(until, std::chrono::steady_clock::now() + stall / 10));
  }
}

bool SinkWriter::broken() const {
  const std::lock_guard lock(state_->mutex);
  return state_->stats.broken;
}

bool SinkWriter::flush(std::chrono::milliseconds stall, bool abandon) {
  std::unique_lock lock(state_->mutex);
  State& state = *state_;
  std::uint64_t seen = state.stats.written_bytes;
  auto deadline = std::chrono::steady_clock::now() + stall;
  while (!abandon && state.size > 0 && !state.stats.broken) {
    state.progress.wait_until(lock, deadline);
    if (state.stats.written_bytes != seen) {  // the reader is slow, not stalled
      seen = state.stats.written_bytes;
      deadline = std::chrono::steady_clock::now() + stall;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      break;
    }
  }
  if (state.size == 0) return !state.stats.broken;
  state.stats.abandoned = true;
  state.stats.dropped_bytes += state.size;
  state.size = 0;
  state.wake.notify_all();
  return false;
}

std::uint64_t SinkWriter::written() const {
  const std::lock_guard lock(state_->mutex);
  return state_->stats.written_bytes;
}

SinkStats SinkWriter::stats() const {
  const std::lock_guard lock(state_->mutex);
  SinkStats stats = state_->stats;
  // A write still stuck in the kernel (a reader that never read again) is the longest wait.
  if (state_->writing) {
    stats.longest_stall = std::max(stats.longest_stall,
                                   std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - state_->write_started));
  }
  return stats;
}

Result<OutputWriters> make_output_writers(int stdout_fd, int stderr_fd) try {
  OutputWriters writers;
  writers.out = std::make_shared<SinkWriter>(stdout_fd);
  struct stat out {};
  struct stat err {};
  const bool same = ::fstat(stdout_fd, &out) == 0 && ::fstat(stderr_fd, &err) == 0 &&
                    out.st_dev == err.st_dev && out.st_ino == err.st_ino;
  writers.err = same ? writers.out : std::make_shared<SinkWriter>(stderr_fd);
  return writers;
} catch (const std::system_error&) {
  return fail(Error{Error::Code::kIo,
                    "no thread to copy the job's output on (a task limit: ulimit -u, pids.max)"});
}

}  // namespace headroom
