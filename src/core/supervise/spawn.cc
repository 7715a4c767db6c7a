#include "core/supervise/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace headroom {

namespace {

struct Pipe {
  int read = -1;
  int write = -1;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(Error::from_errno(errno, "pipe"));
  // A bigger pipe means fewer wake-ups for a job that writes fast (Linux 2.6.35+).
  (void)::fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  return Pipe{fds[0], fds[1]};
}

struct Pty {
  int master = -1;
  std::string slave_name;
};

Result<Pty> make_pty() {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return fail(Error::from_errno(errno, "posix_openpt"));
  std::array<char, 128> name{};
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
      ::ptsname_r(master, name.data(), name.size()) != 0) {
    const int saved = errno;
    ::close(master);
    return fail(Error::from_errno(saved, "pty"));
  }
  return Pty{master, std::string(name.data())};
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const SpawnOptions& options, const Pty& pty, const Pipe& out,
                             const Pipe& err, int status_fd, char* const* argv) {
  if (pty.master < 0) {
    ::setpgid(0, 0);
    if (options.hand_over_foreground) {
      // Before exec, so the job never reads the terminal from the background (SIGTTIN).
      ::signal(SIGTTOU, SIG_IGN);
      (void)::tcsetpgrp(STDIN_FILENO, ::getpid());
    }
  }
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  // What the user ignored stays ignored: `nohup headroom run -- job` must not
  // leave the job open to the SIGHUP of a closing terminal.
  for (const int sig : options.ignored_signals) ::signal(sig, SIG_IGN);
  if (pty.master >= 0) {
    ::setsid();
    const int slave = ::open(pty.slave_name.c_str(), O_RDWR);
    if (slave >= 0) {
      (void)::ioctl(slave, TIOCSCTTY, 0);
      struct termios modes {};
      if (options.terminal_fd >= 0 && ::tcgetattr(options.terminal_fd, &modes) == 0) {
        modes.c_oflag &= ~static_cast<tcflag_t>(OPOST);
        (void)::tcsetattr(slave, TCSANOW, &modes);
        struct winsize size {};
        if (::ioctl(options.terminal_fd, TIOCGWINSZ, &size) == 0)
          (void)::ioctl(slave, TIOCSWINSZ, &size);
      } else if (::tcgetattr(slave, &modes) == 0) {
        modes.c_oflag &= ~static_cast<tcflag_t>(OPOST);
        (void)::tcsetattr(slave, TCSANOW, &modes);
      }
      if (options.stdout_terminal) ::dup2(slave, STDOUT_FILENO);
      if (options.stderr_terminal) ::dup2(slave, STDERR_FILENO);
      if (slave > STDERR_FILENO) ::close(slave);
    }
  }
  if (out.write >= 0) ::dup2(out.write, STDOUT_FILENO);
  if (err.write >= 0) ::dup2(err.write, STDERR_FILENO);
  ::execvp(argv[0], argv);
  const int error = errno;
  (void)!::write(status_fd, &error, sizeof error);
  ::_exit(127);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Result<SpawnedJob> spawn_job(const SpawnOptions& options) {
  if (options.argv.empty()) return fail(Error::invalid("no command to run"));
  std::vector<char*> argv;
  for (const std::string& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  Pty pty;
  Pipe out;
  Pipe err;
  if (options.stdout_terminal || options.stderr_terminal) {
    auto made = make_pty();
    if (!made) return fail(made.error());
    pty = *made;
  }
  if (!options.stdout_terminal) {
    auto made = make_pipe();
    if (!made) return fail(made.error());
    out = *made;
  }
  if (!options.stderr_terminal) {
    auto made = make_pipe();
    if (!made) return fail(made.error());
    err = *made;
  }
  auto status = make_pipe();  // carries execvp's errno; closes on a successful exec
  if (!status) return fail(status.error());

  const pid_t pid = ::fork();
  if (pid < 0) return fail(Error::from_errno(errno, "fork"));
  if (pid == 0) exec_child(options, pty, out, err, status->write, argv.data());

  SpawnedJob job;
  job.pid = pid;
  if (pty.master < 0) (void)::setpgid(pid, pid);  // also in the parent: no race with kill(-pid)
  close_fd(out.write);
  close_fd(err.write);
  close_fd(status->write);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(status->read, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close_fd(status->read);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    close_fd(out.read);
    close_fd(err.read);
    close_fd(pty.master);
    Error error = Error::from_errno(exec_errno, options.argv.front());
    if (exec_errno != ENOENT) error.code = Error::Code::kPermissionDenied;
    // The child already exited with 127; collect it so no zombie stays.
    int ignored = 0;
    (void)::waitpid(pid, &ignored, 0);
    return fail(std::move(error));
  }
  job.mode = pty.master >= 0 ? CaptureMode::kTerminal : CaptureMode::kPipe;
  job.pty_master = pty.master;
  job.stdout_fd = options.stdout_terminal ? pty.master : out.read;
  job.stderr_fd = options.stderr_terminal ? (options.stdout_terminal ? -1 : pty.master) : err.read;
  job.foreground = job.mode == CaptureMode::kPipe && options.hand_over_foreground;
  return job;
}

std::vector<int> inherited_ignored_signals() {
  std::vector<int> ignored;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &action) != 0) continue;
    if ((action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_IGN) ignored.push_back(sig);
  }
  return ignored;
}

void copy_window_size(int terminal_fd, int pty_master) {
  struct winsize size {};
  if (terminal_fd >= 0 && pty_master >= 0 && ::ioctl(terminal_fd, TIOCGWINSZ, &size) == 0) {
    (void)::ioctl(pty_master, TIOCSWINSZ, &size);
  }
}

void take_back_foreground(int terminal_fd) {
  sigset_t ttou;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &ttou, &previous);
  (void)::tcsetpgrp(terminal_fd, ::getpgrp());
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace headroom
