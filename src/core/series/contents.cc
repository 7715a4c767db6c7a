#include "core/series/contents.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/unique_fd.h"
#include "core/units.h"
#include "core/walk/dirents.h"
#include "core/walk/file_stat.h"

namespace headroom {

namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr int kMaxDepth = 8;
// The zip end-of-central-directory record is 22 bytes plus a comment of at most 64 KiB.
constexpr std::size_t kZipTail = 22 + 65535;
// Real safetensors headers are KiB to a few MiB; the format caps them at 100 MB.
constexpr std::uint64_t kSafetensorsHeaderLimit = 100'000'000;

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

/// Lists one directory into `out`, then its subdirectories (the buffer is free again by then).
void list_into(int fd, const std::string& prefix, dev_t device, int depth, std::size_t limit,
               std::vector<char>& buffer, std::vector<ContentFile>& out) {
  std::vector<std::string> subdirectories;
  (void)walk::for_each_dirent(fd, buffer.data(), buffer.size(),
                              [&](std::string_view name, unsigned char) {
                                if (out.size() >= limit) return;
                                const std::string entry(name);
                                walk::FileStat stat;
                                if (walk::stat_at(fd, entry.c_str(), stat) != 0) return;
                                if (stat.kind == walk::FileKind::kFile) {
                                  out.push_back({prefix + entry, stat.apparent_bytes});
                                } else if (stat.kind == walk::FileKind::kDirectory &&
                                           stat.id.dev == device && !stat.mount_root) {
                                  subdirectories.push_back(entry);
                                }
                              });
  if (depth >= kMaxDepth) return;
  for (const std::string& name : subdirectories) {
    const UniqueFd sub(::openat(fd, name.c_str(), kDirectoryFlags));
    if (sub.ok()) list_into(sub.get(), prefix + name + "/", device, depth + 1, limit, buffer, out);
  }
}

bool read_exactly_at(int fd, std::string& out, std::size_t count, off_t offset) {
  out.resize(count);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t got =
        ::pread(fd, out.data() + done, count - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

std::uint64_t little_endian_u64(std::string_view bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

std::string safetensors_damage(std::uint64_t size, const std::string& head) {
  if (size < 8 || head.size() < 8) return fmt::format("{} bytes: no safetensors header", size);
  const std::uint64_t header_bytes = little_endian_u64(head);
  if (header_bytes > kSafetensorsHeaderLimit || 8 + header_bytes > size) {
    return fmt::format("{} bytes, shorter than its own {}-byte safetensors header", size,
                       header_bytes);
  }
  if (head.size() < 8 + header_bytes) return "";  // the caller did not read the header
  const auto header = nlohmann::json::parse(head.substr(8, header_bytes), nullptr, false);
  if (header.is_discarded() || !header.is_object()) return "its safetensors header does not parse";
  std::uint64_t end = 0;
  for (const auto& [key, tensor] : header.items()) {
    if (key == "__metadata__" || !tensor.is_object()) continue;
    const auto offsets = tensor.find("data_offsets");
    if (offsets == tensor.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[1].is_number_unsigned()) {
      continue;
    }
    end = std::max(end, (*offsets)[1].get<std::uint64_t>());
  }
  const std::uint64_t expected = 8 + header_bytes + end;
  if (size < expected) {
    return fmt::format("holds {} of the {} its safetensors header describes", format_bytes(size),
                       format_bytes(expected));
  }
  return "";
}

}  // namespace

std::vector<ContentFile> list_contents(int dir_fd, const std::string& name, std::size_t limit) {
  std::vector<ContentFile> out;
  const UniqueFd dir(::openat(dir_fd, name.c_str(), kDirectoryFlags));
  if (!dir.ok()) return out;
  walk::FileStat stat;
  if (walk::stat_at(dir.get(), "", stat) != 0) return out;
  std::vector<char> buffer(walk::kDirentBufferSize);
  list_into(dir.get(), "", stat.id.dev, 0, limit, buffer, out);
  std::sort(out.begin(), out.end(),
            [](const ContentFile& a, const ContentFile& b) { return a.path < b.path; });
  return out;
}

std::string format_damage_of(const std::string& name, std::uint64_t size, const std::string& head,
                             const std::string& tail) {
  if (head.rfind("PK\x03\x04", 0) == 0) {
    // torch.save's zip (and any zip): the central directory and its end record come last.
    if (tail.find("PK\x05\x06") == std::string::npos) {
      return fmt::format("a zip archive (torch.save) of {} without its end record: cut short",
                         format_bytes(size));
    }
    return "";
  }
  if (ends_with(name, ".safetensors")) return safetensors_damage(size, head);
  return "";
}

std::string format_damage(int dir_fd, const std::string& path) {
  const UniqueFd file(
      ::openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file.ok()) return "";
  struct stat info {};
  if (::fstat(file.get(), &info) != 0 || !S_ISREG(info.st_mode)) return "";
  const auto size = static_cast<std::uint64_t>(info.st_size);
  std::string head;
  if (size < 8) {
    if (!read_exactly_at(file.get(), head, static_cast<std::size_t>(size), 0)) return "";
    return format_damage_of(path, size, head, head);
  }
  if (!read_exactly_at(file.get(), head, 8, 0)) return "";
  std::string tail;
  if (head.rfind("PK\x03\x04", 0) == 0) {
    const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(size, kZipTail));
    if (!read_exactly_at(file.get(), tail, count, static_cast<off_t>(size - count))) return "";
  } else if (ends_with(path, ".safetensors")) {
    const std::uint64_t header_bytes = little_endian_u64(head);
    if (header_bytes <= kSafetensorsHeaderLimit && 8 + header_bytes <= size &&
        !read_exactly_at(file.get(), head, static_cast<std::size_t>(8 + header_bytes), 0)) {
      return "";
    }
  }
  return format_damage_of(path, size, head, tail);
}

}  // namespace headroom
