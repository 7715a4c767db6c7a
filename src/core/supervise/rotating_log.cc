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

#include "core/safe_output.h"
#include "core/supervise/signal_free_thread.h"
#include "core/unique_fd.h"

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
  // The log's directory, opened once: rotation renames and creates relative to it,
  // so a directory swapped for a symlink mid-run redirects nothing (safe_output.h).
  UniqueFd dir;
  std::string name;  // the file's name in `dir`
  UniqueFd file;
  std::uint64_t file_bytes = 0;
  // After a failed (re)open: when to try again (not on every chunk).
  std::chrono::steady_clock::time_point retry_at{};
};

namespace {

using State = RotatingLog::State;

constexpr mode_t kLogMode = 0640;  // the owner's group may read a job's log, nobody else
constexpr std::chrono::seconds kReopenEvery{1};

void record_error(State& state, const std::string& message) {
  const std::lock_guard lock(state.mutex);
  state.stats.last_error = message;
}

void record_errno(State& state, int errnum) {
  record_error(state, state.options.path.string() + ": " + std::strerror(errnum));
}

std::string rotated_leaf(const State& state, unsigned n) {
  return n == 0 ? state.name : state.name + "." + std::to_string(n);
}

// (Re)opens FILE after a rotation or a failure, by the rules of safe_output.h.
void reopen(State& state, ExistingFile existing) {
  auto opened = open_output_at(state.dir.get(), state.name, existing, kLogMode, state.options.path);
  if (!opened) {
    record_error(state, opened.error().message);
    state.retry_at = std::chrono::steady_clock::now() + kReopenEvery;
    return;
  }
  state.file = std::move(*opened);
  struct stat info {};
  state.file_bytes =
      ::fstat(state.file.get(), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
}

void rotate(State& state) {
  {
    const std::lock_guard lock(state.mutex);
    ++state.stats.rotations;
  }
  if (state.options.keep <= 1) {
    // Nothing to keep: empty our own file through its fd, no name involved.
    if (::ftruncate(state.file.get(), 0) != 0) record_errno(state, errno);
    state.file_bytes = 0;
    return;
  }
  // Rename only while FILE still names the file we write: if someone moved it
  // away or put another file there, that file is not ours to rotate.
  const bool ours = names_open_file(state.dir.get(), state.name, state.file.get());
  state.file = UniqueFd();
  if (ours) {
    // renameat moves names, never follows them: a planted FILE.1 -> /etc/passwd
    // becomes FILE.2 -> /etc/passwd and /etc/passwd is untouched.
    for (unsigned n = state.options.keep - 1; n > 0; --n) {
      (void)::renameat(state.dir.get(), rotated_leaf(state, n - 1).c_str(), state.dir.get(),
                       rotated_leaf(state, n).c_str());
    }
  }
  // After our rename FILE must not exist: whatever is there now was planted.
  reopen(state, ours ? ExistingFile::kRefuse : ExistingFile::kAppend);
}

// Writes one chunk; returns the bytes that reached the file.
std::uint64_t write_chunk(State& state, std::string_view chunk) {
  if (!state.file.ok()) {
    if (std::chrono::steady_clock::now() < state.retry_at) return 0;
    reopen(state, ExistingFile::kAppend);
    if (!state.file.ok()) return 0;
  }
  if (state.file_bytes > 0 && state.file_bytes + chunk.size() > state.options.max_bytes) {
    rotate(state);
  }
  if (!state.file.ok()) return 0;
  std::uint64_t done = 0;
  while (done < chunk.size()) {
    const ssize_t wrote = ::write(state.file.get(), chunk.data() + done, chunk.size() - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      record_errno(state, errno);
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
  state->file = UniqueFd();
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
  auto dir = open_output_dir(path.parent_path());
  if (!dir) return fail(dir.error());
  state->dir = std::move(*dir);
  state->name = path.filename().string();
  auto file = open_output_at(state->dir.get(), state->name, ExistingFile::kAppend, kLogMode, path);
  if (!file) return fail(file.error());
  state->file = std::move(*file);
  struct stat info {};
  if (::fstat(state->file.get(), &info) == 0)
    state->file_bytes = static_cast<std::uint64_t>(info.st_size);
  // Detached: close() waits for it with a deadline, and the shared state keeps
  // the memory alive if a write is stuck in the kernel past that deadline.
  auto writer = start_signal_free_thread([state] { writer_loop(state); });
  if (!writer) {
    return fail(Error{Error::Code::kIo, path.string() +
                                            ": no thread to write it on (a task limit: ulimit -u, "
                                            "pids.max)"});
  }
  writer->detach();
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
