// Python's tempfile resolution and multiprocessing's socket dir, reproduced;
// see tempdir.h for the sources and quirks.
#include "core/kernel/tempdir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <random>

namespace headroom {

namespace {

// tempfile._RandomNameSequence draws 8 characters from this alphabet.
constexpr std::string_view kNameCharacters = "abcdefghijklmnopqrstuvwxyz0123456789_";
// tempfile tries this many names per directory before giving up on it.
constexpr int kNamesPerDirectory = 100;
// "/pymp-XXXXXXXX" + "/listener-XXXXXXXX", as multiprocessing names them.
constexpr std::size_t kPympSuffixLength = 1 + 5 + 8 + 1 + 9 + 8;

std::string random_name(std::size_t length) {
  static thread_local std::mt19937 generator{std::random_device{}()};
  std::uniform_int_distribution<std::size_t> pick(0, kNameCharacters.size() - 1);
  std::string name;
  for (std::size_t i = 0; i < length; ++i) name.push_back(kNameCharacters[pick(generator)]);
  return name;
}

// os.path.abspath: join relative paths to the cwd, then normpath (which also
// drops a trailing slash).
std::filesystem::path absolute_path(const std::string& listed, const std::filesystem::path& cwd) {
  std::filesystem::path path = listed;
  if (path.is_relative()) path = cwd / path;
  path = path.lexically_normal();
  if (!path.has_filename() && path != path.root_path()) path = path.parent_path();
  return path;
}

// Python's repr() of a str, enough for paths: single quotes unless it contains one.
std::string python_repr(const std::string& text) {
  const char quote =
      text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
  std::string result(1, quote);
  for (const char c : text) {
    if (c == quote || c == '\\') result.push_back('\\');
    result.push_back(c);
  }
  result.push_back(quote);
  return result;
}

}  // namespace

std::string CandidateOutcome::describe() const {
  if (usable()) return "usable";
  const std::string_view what = step == "create"  ? "creating a test file"
                                : step == "write" ? "writing a test file"
                                : step == "close" ? "closing a test file"
                                                  : "removing a test file";
  return fmt::format("{} (errno {}) {}", std::strerror(error), error, what);
}

std::optional<TempdirCandidate> TempdirResolution::chosen() const {
  if (tried.empty() || !tried.back().usable()) return std::nullopt;
  return tried.back().candidate;
}

std::string TempdirResolution::python_error() const {
  std::string list;
  for (const TempdirCandidate& candidate : candidates) {
    if (!list.empty()) list += ", ";
    list += python_repr(candidate.listed);
  }
  return fmt::format("No usable temporary directory found in [{}]", list);
}

std::vector<TempdirCandidate> tempdir_candidates(const Context& context) {
  std::vector<TempdirCandidate> candidates;
  const auto add = [&](const std::string& listed, const char* origin) {
    candidates.push_back({listed, absolute_path(listed, context.working_directory), origin});
  };
  for (const char* name : {"TMPDIR", "TEMP", "TMP"}) {
    if (auto value = context.env(name)) add(*value, name);
  }
  for (const char* path : {"/tmp", "/var/tmp", "/usr/tmp"}) add(path, "default");
  add(context.working_directory.string(), "cwd");
  return candidates;
}

CandidateOutcome try_tempdir(const SysRoot& root, const TempdirCandidate& candidate) {
  CandidateOutcome outcome{candidate, EEXIST, "create"};
  const std::filesystem::path dir = root.host(candidate.path);
  for (int attempt = 0; attempt < kNamesPerDirectory; ++attempt) {
    const std::filesystem::path file = dir / random_name(8);
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // Python tries another name
      outcome.error = errno;
      return outcome;
    }
    // The order matters: Python writes, closes, then unlinks, and reports the
    // first failure (a failed write still unlinks in its finally clause).
    const ssize_t written = ::write(fd, "blat", 4);
    const int write_error = written < 0 ? errno : (written != 4 ? EIO : 0);
    const int close_error = ::close(fd) != 0 ? errno : 0;
    const int unlink_error = ::unlink(file.c_str()) != 0 ? errno : 0;
    if (write_error != 0) return {candidate, write_error, "write"};
    if (close_error != 0) return {candidate, close_error, "close"};
    if (unlink_error != 0) return {candidate, unlink_error, "unlink"};
    return {candidate, 0, ""};
  }
  return outcome;
}

TempdirResolution resolve_tempdir(const Context& context) {
  TempdirResolution resolution;
  resolution.candidates = tempdir_candidates(context);
  for (const TempdirCandidate& candidate : resolution.candidates) {
    resolution.tried.push_back(try_tempdir(context.root, candidate));
    if (resolution.tried.back().usable()) break;
  }
  return resolution;
}

std::size_t multiprocessing_socket_path_length(const std::filesystem::path& tempdir) {
  return tempdir.native().size() + kPympSuffixLength;
}

SocketProbe probe_multiprocessing_socket(const SysRoot& root,
                                         const std::filesystem::path& tempdir) {
  SocketProbe probe;
  probe.python_path_length = multiprocessing_socket_path_length(tempdir);
  if (probe.python_path_length > kMaxUnixSocketPath) {
    probe.error = ENAMETOOLONG;
    probe.step = "length";
    return probe;
  }
  const auto failed = [&](std::string step) {
    probe.error = errno;
    probe.step = std::move(step);
    return probe;
  };
  // tempfile.mkdtemp(prefix="pymp-"): a private 0700 dir with a fresh name.
  std::filesystem::path dir;
  for (int attempt = 0;; ++attempt) {
    dir = root.host(tempdir) / ("headroom-" + random_name(4));
    if (::mkdir(dir.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt == kNamesPerDirectory) return failed("mkdir");
  }
  // Everything below removes what it made, whatever fails.
  const std::filesystem::path file = dir / "probe";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    failed("write");
  } else {
    const std::string_view payload = "headroom: can multiprocessing use this dir?\n";
    if (::write(fd, payload.data(), payload.size()) != static_cast<ssize_t>(payload.size())) {
      if (errno == 0) errno = EIO;
      failed("write");
    }
    ::close(fd);
    ::unlink(file.c_str());
  }
  if (probe.ok()) {
    const std::filesystem::path socket_path = dir / ("listener-" + random_name(8));
    const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
      failed("socket");
    } else {
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      const std::string& text = socket_path.native();
      if (text.size() >= sizeof(address.sun_path)) {
        // Only a long fixture root gets here: the job's own path fitted above.
        errno = ENAMETOOLONG;
        failed("bind");
      } else {
        std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
        if (::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
          failed("bind");
        } else {
          if (::listen(sock, 1) != 0) failed("listen");
          ::unlink(socket_path.c_str());
        }
      }
      ::close(sock);
    }
  }
  ::rmdir(dir.c_str());
  return probe;
}

}  // namespace headroom
