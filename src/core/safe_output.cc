#include "core/safe_output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace headroom {

namespace {

Error refused(const std::filesystem::path& shown, const std::string& why) {
  return {Error::Code::kPermissionDenied,
          fmt::format("{}: refusing to write: {}; remove it or choose another path", shown.string(),
                      why)};
}

std::string file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link (it could point anywhere, /etc/passwd included)";
  return "not a regular file";
}

// The rules on what an existing entry may be; `info` from fstat or fstatat(NOFOLLOW).
Result<void> check_entry(const struct stat& info, const std::filesystem::path& shown) {
  if (!S_ISREG(info.st_mode)) return fail(refused(shown, "it is " + file_kind(info.st_mode)));
  if (info.st_nlink > 1) {
    return fail(refused(shown, fmt::format("it has {} hard links (another name for the same file, "
                                           "which could be a system file)",
                                           info.st_nlink)));
  }
  if (info.st_uid != ::geteuid()) {
    return fail(refused(shown, fmt::format("it belongs to uid {}, not to uid {} writing it",
                                           info.st_uid, ::geteuid())));
  }
  return {};
}

bool valid_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

Result<UniqueFd> open_output_dir(const std::filesystem::path& dir) {
  const std::filesystem::path named = dir.empty() ? std::filesystem::path(".") : dir;
  UniqueFd fd(::open(named.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.ok()) return fail(Error::from_errno(errno, named.string()));
  return fd;
}

Result<void> check_output_at(int dir_fd, const std::string& name,
                             const std::filesystem::path& shown) {
  if (!valid_name(name)) return fail(Error::invalid(shown.string() + ": not a file name"));
  struct stat info {};
  if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return fail(Error::from_errno(errno, shown.string()));
  }
  return check_entry(info, shown);
}

Result<UniqueFd> open_output_at(int dir_fd, const std::string& name, ExistingFile existing,
                                mode_t create_mode, const std::filesystem::path& shown) {
  if (!valid_name(name)) return fail(Error::invalid(shown.string() + ": not a file name"));
  const int base = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
                   (existing == ExistingFile::kAppend ? O_APPEND : 0);
  // A file created here (O_EXCL) is ours whoever the filesystem says owns it (NFS
  // root_squash); only an existing one is checked. Two tries: it may vanish in between.
  for (int attempt = 0; attempt < 2; ++attempt) {
    UniqueFd created(::openat(dir_fd, name.c_str(), base | O_CREAT | O_EXCL, create_mode));
    if (created.ok()) return created;
    if (errno != EEXIST) return fail(Error::from_errno(errno, shown.string()));
    if (existing == ExistingFile::kRefuse) {
      return fail(refused(shown, "it exists (created by someone else meanwhile)"));
    }
    // Spares opening a device node (which can have side effects) or a FIFO at all;
    // the authoritative check is the fstat of the opened fd below.
    if (auto checked = check_output_at(dir_fd, name, shown); !checked) return fail(checked.error());
    UniqueFd fd(::openat(dir_fd, name.c_str(), base));
    if (!fd.ok()) {
      const int error = errno;
      if (error == ENOENT) continue;
      if (error == ELOOP) return fail(refused(shown, "it is " + file_kind(S_IFLNK)));
      if (error == ENXIO) return fail(refused(shown, "it is a FIFO"));
      return fail(Error::from_errno(error, shown.string()));
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) return fail(Error::from_errno(errno, shown.string()));
    if (auto checked = check_entry(info, shown); !checked) return fail(checked.error());
    if (existing == ExistingFile::kTruncate && info.st_size > 0 && ::ftruncate(fd.get(), 0) != 0) {
      return fail(Error::from_errno(errno, shown.string()));
    }
    return fd;
  }
  return fail(Error::from_errno(ENOENT, shown.string()));
}

Result<UniqueFd> open_output(const std::filesystem::path& path, ExistingFile existing,
                             mode_t create_mode) {
  auto dir = open_output_dir(path.parent_path());
  if (!dir) return fail(dir.error());
  return open_output_at(dir->get(), path.filename().string(), existing, create_mode, path);
}

bool names_open_file(int dir_fd, const std::string& name, int fd) {
  struct stat named {};
  struct stat open {};
  return ::fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
         ::fstat(fd, &open) == 0 && named.st_dev == open.st_dev && named.st_ino == open.st_ino;
}

Result<void> write_all(int fd, std::string_view bytes, const std::filesystem::path& shown) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return fail(Error::from_errno(wrote < 0 ? errno : ENOSPC, shown.string()));
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return {};
}

}  // namespace headroom
