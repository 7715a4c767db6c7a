#include "core/supervise/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
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

bool contains(const std::vector<int>& signals, int signal) {
  return std::find(signals.begin(), signals.end(), signal) != signals.end();
}

// Routes headroom's signals to a signalfd for the duration of a run and
// restores the mask and the dispositions it changed on every path out. A signal
// the user ignored (`nohup`: SIGHUP) is left ignored and not forwarded: blocked,
// it would be queued for the signalfd despite SIG_IGN.
class SignalScope {
 public:
  explicit SignalScope(const std::vector<int>& ignored) {
    sigset_t set;
    sigemptyset(&set);
    for (const int signal : kForwarded) {
      if (!contains(ignored, signal)) sigaddset(&set, signal);
    }
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGWINCH);
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
    fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    // A closed stdout must not kill headroom: the job gets EPIPE instead (see below).
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_pipe_);
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap the job
    // unseen (no exit status); headroom needs the default here (the job gets
    // the inherited disposition back in spawn).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGCHLD, &default_action, &old_child_);
  }
  ~SignalScope() {
    if (fd_ >= 0) ::close(fd_);
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    ::sigaction(SIGCHLD, &old_child_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

 private:
  sigset_t previous_{};
  struct sigaction old_pipe_ {};
  struct sigaction old_child_ {};
  int fd_ = -1;
};

// One captured stream: where it comes from and where it goes.
struct Stream {
  int source = -1;
  SinkWriter* writer = nullptr;
  bool sink_broken = false;
  // Zero-copy path (source and sink pipes, no --log): tee(2) the bytes into
  // `side`, splice(2) them on to the sink without copying, and read the side
  // pipe straight into the ring: one copy per byte instead of three.
  int side_read = -1;
  int side_write = -1;
  /// When bytes of this stream were last moved: a stream moved under kStreaming ago streams.
  std::chrono::steady_clock::time_point moved_at{};
};

// A job that writes fast in small pieces (a line per print, `head` 8 KiB at a time) wakes
// headroom once per write: on the zero-copy path four system calls for a few KiB, and its
// reader woken as often. While a stream streams, a pipe holding less than kFill is given
// kFillTime to fill before it is moved. The job's pipe (1 MiB) does not fill in that time
// below 2 GB/s, so the job does not wait for it, and its output reaches the reader at most
// that much later; a line after a pause goes on at once.
constexpr auto kStreaming = std::chrono::milliseconds(2);
constexpr auto kFillTime = std::chrono::microseconds(500);
constexpr int kFill = 256 * 1024;

void let_it_fill(const Stream& stream, std::chrono::steady_clock::time_point now) {
  if (stream.source < 0 || now - stream.moved_at >= kStreaming) return;
  int queued = 0;
  if (::ioctl(stream.source, FIONREAD, &queued) != 0 || queued >= kFill) return;
  timespec pause{0, std::chrono::duration_cast<std::chrono::nanoseconds>(kFillTime).count()};
  // Signals are blocked for the signalfd: one that arrives now is forwarded after the pause.
  (void)::nanosleep(&pause, nullptr);
}

bool is_pipe(int fd) {
  struct stat info {};
  return ::fstat(fd, &info) == 0 && S_ISFIFO(info.st_mode);
}

// Sets up the zero-copy path when both ends allow it; otherwise read/write.
void try_zero_copy(Stream& stream) {
  // Only pipe to pipe: splice(2) to a file opened O_APPEND (`>> log`) or a
  // terminal is refused by some kernels, and those go through read/write.
  if (stream.source < 0 || !is_pipe(stream.source) || !is_pipe(stream.writer->fd())) return;
  int side[2];
  if (::pipe2(side, O_CLOEXEC | O_NONBLOCK) != 0) return;
  // tee duplicates at most what the side pipe can hold: as much as the job's pipe.
  const int job_pipe = ::fcntl(stream.source, F_GETPIPE_SZ);
  (void)::fcntl(side[1], F_SETPIPE_SZ, job_pipe);
  // A splice moves at most what the reader's pipe has room for, and what does not fit goes
  // through the writer's queue (two copies): a shell's pipe holds 64 KiB, the job's 1 MiB.
  // The reader's pipe is grown to the job's (never shrunk): a bigger buffer is all it changes.
  const int sink = stream.writer->fd();
  if (::fcntl(sink, F_GETPIPE_SZ) < job_pipe) (void)::fcntl(sink, F_SETPIPE_SZ, job_pipe);
  stream.side_read = side[0];
  stream.side_write = side[1];
}

void close_side(Stream& stream) {
  if (stream.side_read >= 0) ::close(stream.side_read);
  if (stream.side_write >= 0) ::close(stream.side_write);
  stream.side_read = stream.side_write = -1;
}

// Moves up to `count` bytes, already known to be in the pipe `from`, to the pipe
// `to` without ever waiting for room (SPLICE_F_NONBLOCK works on both pipes even
// when `to` is a blocking fd). Returns the bytes moved, or -1 when `to` is broken.
ssize_t splice_without_waiting(int from, int to, std::size_t count) {
  std::size_t moved = 0;
  while (moved < count) {
    const ssize_t step =
        ::splice(from, nullptr, to, nullptr, count - moved, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (step > 0) {
      moved += static_cast<std::size_t>(step);
      continue;
    }
    if (step < 0 && errno == EINTR) continue;
    if (step < 0 && errno == EPIPE) return -1;
    break;  // EAGAIN: the reader is behind; the rest goes through the writer's queue
  }
  return static_cast<ssize_t>(moved);
}

// "stdout", "stderr", or both when they are one writer.
void collect_output_stats(const SupervisorOptions& options, SupervisionResult& result) {
  if (options.stdout_sink == options.stderr_sink) {
    result.outputs.emplace_back("stdout+stderr", options.stdout_sink->stats());
    return;
  }
  result.outputs.emplace_back("stdout", options.stdout_sink->stats());
  result.outputs.emplace_back("stderr", options.stderr_sink->stats());
}

std::uint64_t written(const SupervisorOptions& options) {
  return options.stdout_sink->written() +
         (options.stderr_sink == options.stdout_sink ? 0 : options.stderr_sink->written());
}

// After the job ended: lets a slow reader take the queued output while it makes
// progress. A reader stalled for `options.output_stall`, or a signal to headroom
// (a `docker stop` while the output is stuck), ends the wait: the rest is
// counted as dropped rather than holding headroom's exit forever.
void flush_outputs(const SupervisorOptions& options, int signal_fd) {
  std::uint64_t seen = written(options);
  auto deadline = std::chrono::steady_clock::now() + options.output_stall;
  bool give_up = false;
  while (!give_up && !(options.stdout_sink->idle() && options.stderr_sink->idle())) {
    pollfd wait{signal_fd, POLLIN, 0};
    if (::poll(&wait, 1, 50) > 0) {
      signalfd_siginfo info{};
      while (::read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const auto signal = static_cast<int>(info.ssi_signo);
        give_up = give_up || (signal != SIGCHLD && signal != SIGWINCH);
      }
    }
    const std::uint64_t now_written = written(options);
    if (now_written != seen) {
      seen = now_written;
      deadline = std::chrono::steady_clock::now() + options.output_stall;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      give_up = true;
    }
  }
  (void)options.stdout_sink->flush(std::chrono::milliseconds(0), give_up);
  (void)options.stderr_sink->flush(std::chrono::milliseconds(0), give_up);
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

Result<SupervisionResult> supervise(const Context& context, const SupervisorOptions& given,
                                    const SupervisorHooks& hooks) {
  SupervisorOptions options = given;
  // First, before headroom changes any disposition: what the user ignored
  // (nohup's SIGHUP, a shell's SIGINT for a background job) stays ignored in the
  // job and is not forwarded to it.
  options.spawn.ignored_signals = inherited_ignored_signals();
  // Orphans of the job (workers whose parent died, daemonised helpers) are
  // re-parented to headroom instead of init, so their exits are ours to see.
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  SignalScope signals(options.spawn.ignored_signals);  // before the sampler thread starts
  if (signals.fd() < 0) return fail(Error::from_errno(errno, "signalfd"));
  if (!options.stdout_sink || !options.stderr_sink) {
    auto writers = make_output_writers(STDOUT_FILENO, STDERR_FILENO);
    if (!writers) return fail(writers.error());
    options.stdout_sink = writers->out;
    options.stderr_sink = writers->err;
  }

  const std::shared_ptr<RotatingLog>& log = options.log;
  auto spawned = spawn_job(options.spawn);
  if (!spawned) return fail(spawned.error());
  const SpawnedJob job = *spawned;

  SupervisionResult result;
  result.main_pid = job.pid;
  result.mode = job.mode;
  OutputRing ring(options.ring_bytes);
  JobSampler sampler(context, options, hooks, job.pid, ring);

  std::array<Stream, 2> streams{
      {{job.stdout_fd, options.stdout_sink.get()}, {job.stderr_fd, options.stderr_sink.get()}}};
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
  // The reader of headroom's output went away (`| head`): stop reading so the
  // job gets EPIPE on its next write, as it would without headroom.
  const auto close_broken = [](Stream& stream) {
    stream.sink_broken = true;
    ::close(stream.source);
    stream.source = -1;
  };
  // Passes bytes read from the job on; the writer queues them for the sink.
  const auto pass_on = [&](Stream& stream, std::string_view chunk) {
    if (stream.sink_broken) return;
    stream.writer->write(chunk);
    if (stream.writer->broken()) close_broken(stream);
  };
  // Reads one chunk and passes it on; false when nothing was read. The hot
  // path: read, queue for the writer, memcpy into the ring. Nothing else looks at the bytes.
  const auto pump_read = [&](Stream& stream) {
    const ssize_t got = ::read(stream.source, buffer.data(), buffer.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (got <= 0) {  // EOF, or EIO on a pty whose last writer closed
      ::close(stream.source);
      stream.source = -1;
      return false;
    }
    const std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
    pass_on(stream, chunk);
    ring.append(chunk);
    if (log) log->write(chunk);
    return true;
  };
  // Zero-copy: tee into the side pipe, splice on to the sink without waiting
  // for room. While the reader is behind (the writer holds queued bytes), the
  // read path keeps the order: bytes go to the writer's queue.
  const auto pump_spliced = [&](Stream& stream) {
    if (!stream.writer->idle()) return pump_read(stream);
    const ssize_t got =
        ::tee(stream.source, stream.side_write, buffer.size() * 4, SPLICE_F_NONBLOCK);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (got <= 0) {  // EOF (or tee refused: the read path takes over)
      if (got < 0) close_side(stream);
      if (got == 0) {
        ::close(stream.source);
        stream.source = -1;
      }
      return false;
    }
    const auto count = static_cast<std::size_t>(got);
    const ssize_t moved = splice_without_waiting(stream.source, stream.writer->fd(), count);
    if (moved < 0) {
      close_broken(stream);
    } else {
      // The reader is behind: take the rest out of the job's pipe into the queue.
      auto rest = count - static_cast<std::size_t>(moved);
      while (rest > 0) {
        const ssize_t got_rest =
            ::read(stream.source, buffer.data(), std::min(rest, buffer.size()));
        if (got_rest <= 0) break;
        stream.writer->write({buffer.data(), static_cast<std::size_t>(got_rest)});
        rest -= static_cast<std::size_t>(got_rest);
      }
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
    if (!main_exited) let_it_fill(stream, std::chrono::steady_clock::now());
    const bool got = stream.side_read >= 0 ? pump_spliced(stream) : pump_read(stream);
    if (got) stream.moved_at = std::chrono::steady_clock::now();
    // Whether the job left a line open on headroom's stderr: `run --json` then
    // starts its document on a line of its own.
    if (got && stream.writer == options.stderr_sink.get())
      result.stderr_line_open = ring.last(1) != "\n";
    return got;
  };

  // The most one pump queues for a writer: a tee of 4 buffers.
  const std::size_t most_per_pump = buffer.size() * 4;
  for (;;) {
    std::array<pollfd, 3> fds{};
    nfds_t count = 0;
    std::array<Stream*, 3> owner{};
    bool held_back = false;
    for (Stream& stream : streams) {
      if (stream.source < 0) continue;
      // The reader of headroom's output is behind but still reading: the job's output
      // is not read for now, so the job waits on its pipe as it would without headroom
      // instead of having its output dropped. A reader that stopped is not waited for.
      if (stream.writer->should_wait(most_per_pump, options.output_stall)) {
        held_back = true;
        continue;
      }
      owner[count] = &stream;
      fds[count++] = {stream.source, POLLIN, 0};
    }
    const nfds_t signal_slot = count;
    fds[count++] = {signals.fd(), POLLIN, 0};
    int timeout = held_back ? 10 : -1;  // look again for room soon
    if (main_exited) {
      const bool outputs_open = std::any_of(streams.begin(), streams.end(),
                                            [](const Stream& s) { return s.source >= 0; });
      if ((!outputs_open && !children_left) || std::chrono::steady_clock::now() >= deadline) break;
      timeout = static_cast<int>(std::max<std::int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                   std::chrono::steady_clock::now())
                 .count()));
      if (!outputs_open) timeout = std::min(timeout, 50);  // poll for the last orphans
      if (held_back) timeout = std::min(timeout, 10);
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
        do {  // a slow reader is waited for here too; a stopped one is not
          if (stream.source >= 0) {
            stream.writer->wait_for_room(most_per_pump, options.output_stall, options.output_stall);
          }
        } while (stream.source >= 0 && pump(stream));
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
  flush_outputs(options, signals.fd());
  collect_output_stats(options, result);
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
