#include "core/kernel/mountinfo.h"

#include <fmt/format.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace headroom {

namespace {

std::string unescape(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '3') {
      int value = 0;
      bool octal = true;
      for (std::size_t k = 1; k <= 3; ++k) {
        const char c = text[i + k];
        if (c < '0' || c > '7') {
          octal = false;
          break;
        }
        value = value * 8 + (c - '0');
      }
      if (octal) {
        result.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    result.push_back(text[i]);
  }
  return result;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (start < line.size()) {
    while (start < line.size() && line[start] == ' ') ++start;
    if (start >= line.size()) break;
    std::size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(start, end - start));
    start = end;
  }
  return fields;
}

bool has_flag(std::string_view options, std::string_view flag) {
  std::size_t start = 0;
  while (start <= options.size()) {
    std::size_t end = options.find(',', start);
    if (end == std::string_view::npos) end = options.size();
    if (options.substr(start, end - start) == flag) return true;
    start = end + 1;
  }
  return false;
}

/// `path` as lexically_normal() gives it. Most paths asked about (a watch's, at every
/// sample) are normal already: no empty, "." or ".." component. Those are taken as they are;
/// lexically_normal() builds a path object and its components, then a new one.
std::string normal_text(const std::filesystem::path& path) {
  const std::string& text = path.native();
  bool normal = text.find("//") == std::string::npos;
  for (std::size_t start = 0; normal && start <= text.size();) {
    const std::size_t end = std::min(text.find('/', start), text.size());
    const std::string_view part = std::string_view(text).substr(start, end - start);
    normal = part != "." && part != "..";
    start = end + 1;
  }
  return normal ? text : path.lexically_normal().string();
}

bool is_prefix_path(const std::string& mount_point, const std::string& path) {
  if (mount_point == "/") return true;
  if (path.compare(0, mount_point.size(), mount_point) != 0) return false;
  return path.size() == mount_point.size() || path[mount_point.size()] == '/';
}

}  // namespace

bool MountEntry::read_only() const {
  return has_flag(mount_options, "ro") || has_flag(super_options, "ro");
}

bool MountEntry::no_exec() const { return has_flag(mount_options, "noexec"); }

std::optional<std::string> MountEntry::option(std::string_view key) const {
  std::string_view options = super_options;
  std::size_t start = 0;
  while (start <= options.size()) {
    std::size_t end = options.find(',', start);
    if (end == std::string_view::npos) end = options.size();
    const std::string_view item = options.substr(start, end - start);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return std::string(item.substr(key.size() + 1));
    }
    start = end + 1;
  }
  return std::nullopt;
}

Result<std::vector<MountEntry>> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> mounts;
  std::size_t line_number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = split_fields(line);
    std::size_t separator = 6;
    while (separator < fields.size() && fields[separator] != "-") ++separator;
    if (fields.size() < 10 || separator + 2 >= fields.size()) {
      return fail(
          Error::parse(fmt::format("mountinfo:{}: expected at least 10 fields", line_number)));
    }
    MountEntry entry;
    const auto parse_int = [](std::string_view field, int& out) {
      return std::from_chars(field.data(), field.data() + field.size(), out).ec == std::errc();
    };
    if (!parse_int(fields[0], entry.mount_id) || !parse_int(fields[1], entry.parent_id)) {
      return fail(Error::parse(fmt::format("mountinfo:{}: bad mount id", line_number)));
    }
    entry.device = std::string(fields[2]);
    entry.root = unescape(fields[3]);
    entry.mount_point = unescape(fields[4]);
    entry.mount_options = std::string(fields[5]);
    entry.fstype = std::string(fields[separator + 1]);
    entry.source = unescape(fields[separator + 2]);
    if (separator + 3 < fields.size()) entry.super_options = std::string(fields[separator + 3]);
    mounts.push_back(std::move(entry));
  }
  return mounts;
}

Result<std::vector<MountEntry>> read_mountinfo(const Context& context) {
  auto text = context.root.read(context.process_file("mountinfo"));
  if (!text) return fail(text.error());
  return parse_mountinfo(*text);
}

const MountEntry* find_mount(const std::vector<MountEntry>& mounts,
                             const std::filesystem::path& host_path) {
  const std::string path = normal_text(host_path);
  const MountEntry* best = nullptr;
  for (const MountEntry& mount : mounts) {
    if (!is_prefix_path(mount.mount_point, path)) continue;
    // Later lines are mounted later and hide earlier ones on the same point.
    if (best == nullptr || mount.mount_point.size() >= best->mount_point.size()) best = &mount;
  }
  return best;
}

bool lookup_stays_local(const std::vector<MountEntry>& mounts,
                        const std::filesystem::path& host_path) {
  // Block devices and memory only: statfs reads counters in memory and a lookup reads
  // cached or local directory blocks.
  static constexpr std::array<std::string_view, 10> kLocal = {
      "tmpfs", "devtmpfs", "ramfs", "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "vfat"};
  if (!host_path.is_absolute()) return false;
  const std::string path = normal_text(host_path);
  if (path != host_path.native()) {
    for (const std::filesystem::path& part : host_path) {
      if (part == "..") return false;
    }
  }
  bool found = false;
  for (const MountEntry& mount : mounts) {
    if (!is_prefix_path(mount.mount_point, path)) continue;
    if (std::find(kLocal.begin(), kLocal.end(), mount.fstype) == kLocal.end()) return false;
    found = true;
  }
  return found;
}

std::optional<std::vector<std::uint64_t>> devices_below(const std::vector<MountEntry>& mounts,
                                                        const std::filesystem::path& host_path) {
  // One superblock, one st_dev, for every file: what maps' dev column shows too.
  static constexpr std::array<std::string_view, 9> kOneDevice = {
      "tmpfs", "devtmpfs", "ramfs", "ext2", "ext3", "ext4", "xfs", "f2fs", "vfat"};
  if (!host_path.is_absolute()) return std::nullopt;
  std::string path = normal_text(host_path);
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  if (find_mount(mounts, path) == nullptr) return std::nullopt;
  std::vector<std::uint64_t> devices;
  for (const MountEntry& mount : mounts) {
    // A file whose name reads as one at or below the path is on a mount below it, or on
    // one on the way to it: a file opened before a later mount on the path or above it
    // hid its directory still reads so, and that filesystem is the one mounted over.
    if (!is_prefix_path(mount.mount_point, path) && !is_prefix_path(path, mount.mount_point)) {
      continue;
    }
    if (std::find(kOneDevice.begin(), kOneDevice.end(), mount.fstype) == kOneDevice.end()) {
      return std::nullopt;
    }
    const std::string_view text = mount.device;
    const std::size_t colon = text.find(':');
    unsigned major_number = 0;
    unsigned minor_number = 0;
    if (colon == std::string_view::npos ||
        std::from_chars(text.data(), text.data() + colon, major_number).ec != std::errc() ||
        std::from_chars(text.data() + colon + 1, text.data() + text.size(), minor_number).ec !=
            std::errc()) {
      return std::nullopt;
    }
    devices.push_back(static_cast<std::uint64_t>(makedev(major_number, minor_number)));
  }
  return devices;
}

}  // namespace headroom
