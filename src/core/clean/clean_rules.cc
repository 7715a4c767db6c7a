#include "core/clean/clean_rules.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "core/clean/tree_use.h"
#include "core/inuse/user_names.h"
#include "core/units.h"

namespace headroom {

bool protected_tmp_name(std::string_view name) {
  constexpr std::array<std::string_view, 6> kExact = {
      ".X11-unix", ".ICE-unix", ".font-unix", ".XIM-unix", ".Test-unix", "snap-private-tmp"};
  for (std::string_view exact : kExact) {
    if (name == exact) return true;
  }
  return name.substr(0, 16) == "systemd-private-";
}

std::chrono::seconds minimum_age(const CleanOptions& options, bool tmp) {
  if (options.older_than) return *options.older_than;
  return tmp ? kDefaultTmpAge : std::chrono::seconds{0};
}

std::string quarantine_name() {
  std::array<unsigned char, 8> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got > 0) filled += static_cast<std::size_t>(got);
  }
  std::string name = ".headroom-clean-";
  for (unsigned char byte : bytes) name += fmt::format("{:02x}", byte);
  return name;
}

namespace {

// Directories whose entries are never a temp dir's, whatever TMPDIR says: their aliases
// (a symlink or bind mount to them) are refused too, by inode.
constexpr std::array<std::string_view, 25> kSystemDirs = {
    "/",       "/bin",   "/boot", "/dev",     "/etc",     "/home",      "/lib", "/lib32", "/lib64",
    "/libx32", "/media", "/mnt",  "/opt",     "/proc",    "/root",      "/run", "/sbin",  "/srv",
    "/sys",    "/usr",   "/var",  "/var/lib", "/var/log", "/var/cache", "/snap"};
// And nothing below these.
constexpr std::array<std::string_view, 14> kSystemTrees = {
    "/bin",    "/boot", "/dev",  "/etc", "/lib", "/lib32",   "/lib64",
    "/libx32", "/proc", "/sbin", "/sys", "/usr", "/var/lib", "/var/log"};

}  // namespace

Result<void> check_tmp_path(const std::filesystem::path& dir) {
  const std::string shown = dir.string();
  if (!dir.is_absolute()) {
    return fail(Error::invalid(fmt::format("temp dir '{}' is not an absolute path", shown)));
  }
  for (const auto& part : dir) {
    if (part == "..") {
      return fail(Error::invalid(fmt::format("temp dir '{}' contains '..'", shown)));
    }
  }
  const std::string normal = dir.lexically_normal().string();
  const std::string trimmed =
      normal.size() > 1 && normal.back() == '/' ? normal.substr(0, normal.size() - 1) : normal;
  for (std::string_view tree : kSystemTrees) {
    if (path_at_or_under(trimmed, tree)) {
      return fail(Error::invalid(
          fmt::format("refusing to clean '{}' as a temp dir: it is a system directory", shown)));
    }
  }
  return {};
}

Result<void> check_tmp_dir(const Context& context, const std::filesystem::path& dir, int dir_fd,
                           bool explicit_dir) {
  if (auto lexical = check_tmp_path(dir); !lexical) return lexical;
  const std::string shown = dir.string();
  struct stat opened {};
  if (::fstat(dir_fd, &opened) != 0) return fail(Error::from_errno(errno, shown));
  for (std::string_view system : kSystemDirs) {
    struct stat info {};
    const std::filesystem::path rooted = context.root.host(std::filesystem::path(system));
    if (::stat(rooted.c_str(), &info) == 0 && info.st_dev == opened.st_dev &&
        info.st_ino == opened.st_ino) {
      return fail(Error::invalid(fmt::format(
          "refusing to clean '{}' as a temp dir: it is {}, a system directory", shown, system)));
    }
  }
  constexpr mode_t kTmpMode = S_ISVTX | S_IRWXU | S_IRWXG | S_IRWXO;
  if (!explicit_dir && (opened.st_mode & kTmpMode) != kTmpMode) {
    return fail(Error::invalid(fmt::format(
        "'{}' (from $TMPDIR) is not a shared temp dir (mode {:04o}, not sticky and world-"
        "writable like /tmp): name it with --tmp-dir {} if you mean to clean it",
        shown, opened.st_mode & 07777, shown)));
  }
  return {};
}

EntryJudge::EntryJudge(const Context& context, const CleanOptions& options, const InUseIndex& index,
                       const LiveSockets* sockets, std::chrono::seconds minimum_age)
    : context_(context),
      options_(options),
      index_(index),
      sockets_(sockets),
      visibility_(visibility_of(context, index, options.ignore_unreadable)),
      euid_(context.syscalls->effective_uid()),
      names_(context) {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       context.syscalls->now().time_since_epoch())
                       .count();
  minimum_age_ = minimum_age;
  newest_allowed_ns_ =
      now - std::chrono::duration_cast<std::chrono::nanoseconds>(minimum_age).count();
}

std::optional<std::string> EntryJudge::keep(const TreeEntry& entry, std::string_view shown,
                                            bool check_age) const {
  const walk::FileStat& stat = entry.stat;
  const mode_t type = stat.mode & S_IFMT;
  if (type == S_IFCHR || type == S_IFBLK) return "a device node";
  if (auto refused = owner_refusal(options_, euid_, stat.owner, names_)) return refused;
  const std::int64_t activity = last_activity_ns(stat);
  if (check_age && activity > newest_allowed_ns_) {
    const auto now = context_.syscalls->now().time_since_epoch();
    const auto ago =
        std::chrono::duration_cast<std::chrono::seconds>(now - std::chrono::nanoseconds(activity));
    return fmt::format("used {} ago, younger than {}",
                       format_duration(std::max(ago, std::chrono::seconds{0})),
                       format_duration(minimum_age_));
  }
  if ((stat.mode & S_IFMT) != S_IFSOCK) {
    return entry_in_use(entry, index_, visibility_, euid_, &blocking_);
  }
  const FileId id{static_cast<std::uint64_t>(stat.id.dev), static_cast<std::uint64_t>(stat.id.ino)};
  if (const auto holders = holder_pids(index_.holders(id)); !holders.empty()) {
    return describe_holders(index_, holders);
  }
  if (sockets_ == nullptr) return "a socket";
  if (sockets_->maybe_bound(shown, entry.name)) return "a live socket (bound by a process)";
  if (!sockets_->unread_pids.empty()) {
    return fmt::format(
        "a socket, and the socket table of pid {}'s network namespace could not "
        "be read",
        sockets_->unread_pids.front());
  }
  if (visibility_.outer_pid_namespaces_hidden) {
    return "a socket, and processes outside this pid namespace could have bound it";
  }
  return std::nullopt;
}

}  // namespace headroom
