#include "core/supervise/rotating_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace headroom {

struct RotatingLog::State {
  RotatingLogOptions options;
  std::mutex mutex;
  std::condition_variable wake;     // the writer waits for data
  std::condition_variable drained;  // close() waits for the writer
  std::deque<std::string> queue;
  std::uint64_t queued_bytes = 0;
  bool stopping = false;
  bool finished = false;
  RotatingLogStats stats;
  int fd = -1;
  std::uint64_t file_bytes = 0;
};

namespace {

using State = RotatingLog::State;

void record_error(State& state, int errnum) {
  const std::lock_guard lock(state.mutex);
  state.stats.last_error = state.options.path.string() + ": " + std::strerror(errnum);
}

void rotate(State& state) {
  const auto& path = state.options.path;
  if (state.fd >= 0) ::close(state.fd);
  state.fd = -1;
  if (state.options.keep <= 1) {
    ::unlink(path.c_str());
  } else {
    for (unsigned n = state.options.keep - 1; n > 0; --n) {
      ::rename(rotated_name(path, n - 1).c_str(), rotated_name(path, n).c_str());
    }
  }
  state.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (state.fd < 0) record_error(state, errno);
  state.file_bytes = 0;
  const std::lock_guard lock(state.mutex);
  ++state.stats.rotations;
}

// Writes one chunk; returns the bytes that reached the file.
std::uint64_t write_chunk(State& state, std::string_view chunk) {
  if (state.fd < 0 || state.file_bytes + chunk.size() > state.options.max_bytes) rotate(state);
  if (state.fd < 0) return 0;
  std::uint64_t done = 0;
  while (done < chunk.size()) {
    const ssize_t wrote = ::write(state.fd, chunk.data() + done, chunk.size() - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      record_error(state, errno);
      break;
    }
    done += static_cast<std::uint64_t>(wrote);
  }
  state.file_bytes += done;
  return done;
}

void writer_loop(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mutex);
  for (;;) {
    state->wake.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
    if (state->queue.empty()) break;  // stopping and drained
    std::string chunk = std::move(state->queue.front());
    state->queue.pop_front();
    lock.unlock();
    const std::uint64_t written = write_chunk(*state, chunk);
    lock.lock();
    state->queued_bytes -= chunk.size();
    state->stats.written_bytes += written;
    state->stats.lost_bytes += chunk.size() - written;
  }
  if (state->fd >= 0) ::close(state->fd);
  state->fd = -1;
  state->finished = true;
  state->drained.notify_all();
}

}  // namespace

std::filesystem::path rotated_name(const std::filesystem::path& path, unsigned n) {
  if (n == 0) return path;
  return std::filesystem::path(path.string() + "." + std::to_string(n));
}

Result<std::unique_ptr<RotatingLog>> RotatingLog::open(RotatingLogOptions options) {
  if (options.keep == 0) options.keep = 1;
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  const auto& path = state->options.path;
  state->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (state->fd < 0) return fail(Error::from_errno(errno, path.string()));
  struct stat info {};
  if (::fstat(state->fd, &info) == 0) state->file_bytes = static_cast<std::uint64_t>(info.st_size);
  // Detached: close() waits for it with a deadline, and the shared state keeps
  // the memory alive if a write is stuck in the kernel past that deadline.
  std::thread([state] { writer_loop(state); }).detach();
  return std::unique_ptr<RotatingLog>(new RotatingLog(state));
}

RotatingLog::RotatingLog(std::shared_ptr<State> state) : state_(std::move(state)) {}

RotatingLog::~RotatingLog() { close(0); }

void RotatingLog::write(std::string_view bytes) {
  if (bytes.empty()) return;
  {
    const std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    if (state_->queued_bytes + bytes.size() > state_->options.queue_bytes) {
      state_->stats.lost_bytes += bytes.size();
      return;
    }
    state_->queued_bytes += bytes.size();
    state_->queue.emplace_back(bytes);
  }
  state_->wake.notify_one();
}

RotatingLogStats RotatingLog::close(int timeout_ms) {
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->wake.notify_one();
  state_->drained.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return state_->finished; });
  RotatingLogStats stats = state_->stats;
  if (!state_->finished) {
    // Whatever is still queued will not be waited for.
    stats.lost_bytes += state_->queued_bytes;
  }
  return stats;
}

}  // namespace headroom
