#include "core/supervise/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/supervise/job_sampler.h"
#include "core/supervise/output_ring.h"

namespace headroom {

namespace {

// Signals a user sends to headroom that the job should get. SIGINT and SIGQUIT
// come from the keyboard, which would reach the whole foreground group when the
// job runs directly, so they go to the job's process group; the others go to
// the job's main process, as `kill <pid>` of the job would.
constexpr std::array kForwarded = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

bool to_group(int signal) { return signal == SIGINT || signal == SIGQUIT; }

// Restores the signal mask and SIGPIPE disposition on every path out.
class SignalScope {
 public:
  SignalScope() {
    sigset_t set;
    sigemptyset(&set);
    for (const int signal : kForwarded) sigaddset(&set, signal);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGWINCH);
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
    fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    // A closed stdout must not kill headroom: the job gets EPIPE instead (see below).
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~SignalScope() {
    if (fd_ >= 0) ::close(fd_);
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

 private:
  sigset_t previous_{};
  struct sigaction old_pipe_ {};
  int fd_ = -1;
};

// After EINTR (retry) or EAGAIN on a non-blocking sink (wait for room): true
// when the write should be tried again.
bool retry_write(int fd) {
  if (errno == EINTR) return true;
  if (errno != EAGAIN) return false;
  pollfd wait{fd, POLLOUT, 0};
  (void)::poll(&wait, 1, -1);
  return true;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0) {
      if (retry_write(fd)) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

// One captured stream: where it comes from and where it goes.
struct Stream {
  int source = -1;
  int sink = -1;
  bool sink_broken = false;
  // Zero-copy path (source and sink pipes, no --log): tee(2) the
  // bytes into `side`, splice(2) them on to the sink without copying, and read
  // the side pipe straight into the ring: one copy per byte instead of three.
  int side_read = -1;
  int side_write = -1;
};

bool is_pipe(int fd) {
  struct stat info {};
  return ::fstat(fd, &info) == 0 && S_ISFIFO(info.st_mode);
}

// Sets up the zero-copy path when both ends allow it; otherwise read/write.
void try_zero_copy(Stream& stream) {
  // Only pipe to pipe: splice(2) to a file opened O_APPEND (`>> log`) or a
  // terminal is refused by some kernels, and those go through read/write.
  if (stream.source < 0 || !is_pipe(stream.source) || !is_pipe(stream.sink)) return;
  int side[2];
  if (::pipe2(side, O_CLOEXEC | O_NONBLOCK) != 0) return;
  // tee duplicates at most what the side pipe can hold: as much as the job's pipe.
  (void)::fcntl(side[1], F_SETPIPE_SZ, ::fcntl(stream.source, F_GETPIPE_SZ));
  stream.side_read = side[0];
  stream.side_write = side[1];
}

void close_side(Stream& stream) {
  if (stream.side_read >= 0) ::close(stream.side_read);
  if (stream.side_write >= 0) ::close(stream.side_write);
  stream.side_read = stream.side_write = -1;
}

// Moves `count` bytes, already known to be in the pipe `from`, to `to`.
bool splice_all(int from, int to, std::size_t count) {
  while (count > 0) {
    const ssize_t moved = ::splice(from, nullptr, to, nullptr, count, SPLICE_F_MOVE);
    if (moved < 0) {
      if (retry_write(to)) continue;
      return false;
    }
    count -= static_cast<std::size_t>(moved);
  }
  return true;
}

}  // namespace

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

bool mentions_enospc(std::string_view text) {
  static constexpr std::string_view kMarkers[] = {"No space left on device", "[Errno 28]", "ENOSPC",
                                                  "file write failed"};
  return std::any_of(std::begin(kMarkers), std::end(kMarkers), [&](std::string_view marker) {
    return text.find(marker) != std::string_view::npos;
  });
}

Result<SupervisionResult> supervise(const Context& context, const SupervisorOptions& options,
                                    const SupervisorHooks& hooks) {
  // Orphans of the job (workers whose parent died, daemonised helpers) are
  // re-parented to headroom instead of init, so their exits are ours to see.
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  SignalScope signals;  // before any thread starts, so all of them block these
  if (signals.fd() < 0) return fail(Error::from_errno(errno, "signalfd"));

  std::unique_ptr<RotatingLog> log;
  if (options.log) {
    auto opened = RotatingLog::open(*options.log);
    if (!opened) return fail(opened.error());
    log = std::move(*opened);
  }
  auto spawned = spawn_job(options.spawn);
  if (!spawned) {
    if (log) (void)log->close();
    return fail(spawned.error());
  }
  const SpawnedJob job = *spawned;

  SupervisionResult result;
  result.main_pid = job.pid;
  result.mode = job.mode;
  OutputRing ring(options.ring_bytes);
  JobSampler sampler(context, options, hooks, job.pid, ring);

  std::array<Stream, 2> streams{
      {{job.stdout_fd, options.stdout_fd, false}, {job.stderr_fd, options.stderr_fd, false}}};
  for (Stream& stream : streams) {
    if (stream.source >= 0) (void)::fcntl(stream.source, F_SETFL, O_NONBLOCK);
    if (!log) try_zero_copy(stream);
  }
  std::vector<char> buffer(256 * 1024);
  bool main_exited = false;
  bool children_left = true;
  std::chrono::steady_clock::time_point deadline{};

  const auto forward = [&](int signal) {
    const bool group = to_group(signal) || main_exited;
    ::kill(group ? -job.pid : job.pid, signal);
    result.forwarded.push_back({signal, std::chrono::system_clock::now(), group});
  };
  const auto reap = [&] {
    for (;;) {
      int status = 0;
      struct rusage usage {};
      const pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
      if (pid == 0) return;
      if (pid < 0) {
        if (errno == ECHILD) children_left = false;
        return;
      }
      result.exits.push_back({pid, status, std::chrono::system_clock::now(),
                              static_cast<std::uint64_t>(usage.ru_maxrss) * 1024});
      if (pid == job.pid) {
        main_exited = true;
        result.wait_status = status;
        deadline = std::chrono::steady_clock::now() + options.grace;
      }
    }
  };
  // Reads one chunk and passes it on; false when nothing was read. The hot
  // path: read, write, memcpy into the ring. Nothing else looks at the bytes here.
  const auto pump_spliced = [&](Stream& stream) {
    const ssize_t got =
        ::tee(stream.source, stream.side_write, buffer.size() * 4, SPLICE_F_NONBLOCK);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (got <= 0) {  // EOF (or tee refused: the read path below sees the same)
      if (got < 0) close_side(stream);
      if (got == 0) {
        ::close(stream.source);
        stream.source = -1;
      }
      return false;
    }
    const auto count = static_cast<std::size_t>(got);
    if (!stream.sink_broken && !splice_all(stream.source, stream.sink, count)) {
      stream.sink_broken = true;  // as in the read path: the job gets EPIPE next
      ::close(stream.source);
      stream.source = -1;
    }
    (void)ring.append_from(stream.side_read, count);
    return true;
  };
  const Stream* last_stream = nullptr;
  const auto pump = [&](Stream& stream) {
    if (&stream != last_stream) {
      // stdout and stderr share the ring: a line one left open must not run
      // into the other's next line for explain (the passed-through bytes are untouched).
      if (last_stream != nullptr) ring.end_open_line();
      last_stream = &stream;
    }
    if (stream.side_read >= 0) return pump_spliced(stream);
    const ssize_t got = ::read(stream.source, buffer.data(), buffer.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (got <= 0) {  // EOF, or EIO on a pty whose last writer closed
      ::close(stream.source);
      stream.source = -1;
      return false;
    }
    const std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
    if (!stream.sink_broken && !write_all(stream.sink, chunk)) {
      // Our stdout was closed (`| head`): stop reading so the job gets EPIPE
      // on its next write, as it would without headroom.
      stream.sink_broken = true;
      ::close(stream.source);
      stream.source = -1;
    }
    ring.append(chunk);
    if (log) log->write(chunk);
    return true;
  };

  for (;;) {
    std::array<pollfd, 3> fds{};
    nfds_t count = 0;
    std::array<Stream*, 3> owner{};
    for (Stream& stream : streams) {
      if (stream.source < 0) continue;
      owner[count] = &stream;
      fds[count++] = {stream.source, POLLIN, 0};
    }
    const nfds_t signal_slot = count;
    fds[count++] = {signals.fd(), POLLIN, 0};
    int timeout = -1;
    if (main_exited) {
      const bool outputs_open = signal_slot > 0;
      if ((!outputs_open && !children_left) || std::chrono::steady_clock::now() >= deadline) break;
      timeout = static_cast<int>(std::max<std::int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                   std::chrono::steady_clock::now())
                 .count()));
      if (!outputs_open) timeout = std::min(timeout, 50);  // poll for the last orphans
    }
    const int ready = ::poll(fds.data(), count, timeout);
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < signal_slot; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) (void)pump(*owner[i]);
    }
    bool child_changed = main_exited;
    if ((fds[signal_slot].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      while (::read(signals.fd(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const int signal = static_cast<int>(info.ssi_signo);
        if (signal == SIGCHLD) {  // coalesced: reap everything below
          child_changed = true;
          continue;
        }
        if (signal == SIGWINCH) {
          copy_window_size(options.spawn.terminal_fd, job.pty_master);
          continue;
        }
        forward(signal);
      }
    }
    if (child_changed) reap();
    if (main_exited && !children_left) {
      // Nothing can write any more: drain what is buffered and stop.
      for (Stream& stream : streams) {
        while (stream.source >= 0 && pump(stream)) {
        }
      }
    }
  }
  for (Stream& stream : streams) {
    if (stream.source >= 0) ::close(stream.source);
    close_side(stream);
  }
  if (job.foreground) take_back_foreground(STDIN_FILENO);
  sampler.stop(result);
  reap();
  // Still-running processes of the job (orphans that outlived the grace).
  for (const auto& [pid, identity] : result.processes) {
    if (pid != job.pid && ::kill(pid, 0) == 0 &&
        std::none_of(result.exits.begin(), result.exits.end(),
                     [pid = pid](const ProcessExit& exit) { return exit.pid == pid; })) {
      result.left_running.push_back(pid);
    }
  }
  result.exit_code = exit_code_of(result.wait_status);
  result.output_tail = ring.contents();
  result.output_bytes = ring.total_bytes();
  if (log) result.log = log->close();
  return result;
}

}  // namespace headroom
