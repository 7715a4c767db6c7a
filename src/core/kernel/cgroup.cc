// Memory cgroup reader; see cgroup.h for the sources and their quirks.

#include "core/kernel/cgroup.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/kernel/mountinfo.h"
#include "core/kernel/text.h"

namespace headroom {

namespace {

// v1 reports "unlimited" as PAGE_COUNTER_MAX pages in bytes, which depends on
// the page size (9223372036854771712 with 4 KiB pages); anything this large
// cannot be a real limit.
constexpr std::uint64_t kUnlimitedFloor = std::uint64_t{1} << 62;

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(separator), text.size());
    if (end > 0) parts.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return parts;
}

bool has(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Where a hierarchy's cgroup `path` is visible: the mount shows the subtree
// below its root, so strip that root. Inside a container without a cgroup
// namespace the path is /docker/<id> and so is the mount's root.
std::filesystem::path below(const std::filesystem::path& mount_point, std::string_view rest) {
  const std::filesystem::path relative = std::filesystem::path(rest).relative_path();
  // path / "" would append a trailing separator.
  return relative.empty() ? mount_point : mount_point / relative;
}

std::filesystem::path cgroup_directory(const MountEntry& mount, const std::string& path) {
  std::filesystem::path mount_point = mount.mount_point;
  if (mount.root == "/") return below(mount_point, path);
  if (path == mount.root) return mount_point;
  if (path.size() > mount.root.size() && path.compare(0, mount.root.size(), mount.root) == 0 &&
      path[mount.root.size()] == '/') {
    return below(mount_point, std::string_view(path).substr(mount.root.size()));
  }
  // The cgroup lies outside what is mounted (moved after the mount, or another
  // namespace): the mount's root is the closest we can see.
  return mount_point;
}

Result<std::uint64_t> parse_number(std::string_view text) {
  text = trim_blanks(text);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return fail(Error::parse(fmt::format("not a number: '{}'", text)));
  }
  return value;
}

// Reads one file of the cgroup directory; nullopt when the kernel lacks it. The file's path
// is made as one string (a watch reads these every second; path's operator/ splits and
// copies the components again).
std::optional<std::string> read_file(const Context& context, std::string_view dir,
                                     std::string_view name) {
  std::string file(dir);
  if (file.empty() || file.back() != '/') file += '/';
  file += name;
  auto text =
      context.root.read(std::filesystem::path(std::move(file)), 256 * 1024, FileEnd::kShortRead);
  if (!text) return std::nullopt;
  return *text;
}

std::optional<std::uint64_t> read_number(const Context& context, std::string_view dir,
                                         std::string_view name) {
  const auto text = read_file(context, dir, name);
  if (!text) return std::nullopt;
  auto value = parse_number(*text);
  if (!value) return std::nullopt;
  return *value;
}

// A limit file's text: nullopt = unlimited or absent.
std::optional<std::uint64_t> limit_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  auto limit = parse_cgroup_limit(*text);
  return limit ? *limit : std::nullopt;
}

// The limit file of one directory: nullopt = unlimited or absent.
std::optional<std::uint64_t> read_limit(const Context& context, std::string_view dir,
                                        std::string_view name) {
  return limit_of(read_file(context, dir, name));
}

std::optional<std::uint64_t> keyed(const std::optional<std::string>& text, std::string_view key) {
  return text ? flat_keyed_value(*text, key) : std::nullopt;
}

}  // namespace

Result<CgroupLocation> locate_cgroup(const std::vector<CgroupMembership>& memberships,
                                     const std::vector<MountEntry>& mounts,
                                     std::string_view controller) {
  // Hybrid hosts mount v1 controllers and a v2 "unified" tree side by side;
  // a controller lives on exactly one of them, and v1 wins when bound.
  for (const CgroupMembership& member : memberships) {
    if (member.hierarchy_id == 0 || !has(member.controllers, controller)) continue;
    for (const MountEntry& mount : mounts) {
      if (mount.fstype != "cgroup" || !has(split(mount.super_options, ','), controller)) continue;
      return CgroupLocation{CgroupVersion::kV1, member.path, cgroup_directory(mount, member.path),
                            mount.mount_point};
    }
    return fail(Error{Error::Code::kNotFound, fmt::format("the v1 {} hierarchy ({}) is not mounted",
                                                          controller, member.path)});
  }
  for (const CgroupMembership& member : memberships) {
    if (member.hierarchy_id != 0) continue;
    for (const MountEntry& mount : mounts) {
      if (mount.fstype != "cgroup2") continue;
      return CgroupLocation{CgroupVersion::kV2, member.path, cgroup_directory(mount, member.path),
                            mount.mount_point};
    }
    return fail(Error{Error::Code::kNotFound, "the cgroup v2 hierarchy is not mounted"});
  }
  return fail(
      Error{Error::Code::kNotFound, fmt::format("the process is in no {} cgroup", controller)});
}

std::string_view to_string(CgroupVersion version) {
  return version == CgroupVersion::kV1 ? "v1" : "v2";
}

Result<std::vector<CgroupMembership>> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupMembership> memberships;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    ++line_number;
    if (line.empty()) continue;
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return fail(
          Error::parse(fmt::format("cgroup:{}: expected id:controllers:path", line_number)));
    }
    CgroupMembership member;
    const std::string_view id = line.substr(0, first);
    if (std::from_chars(id.data(), id.data() + id.size(), member.hierarchy_id).ec != std::errc()) {
      return fail(Error::parse(fmt::format("cgroup:{}: bad hierarchy id", line_number)));
    }
    member.controllers = split(line.substr(first + 1, second - first - 1), ',');
    // The path is the rest of the line: it may itself contain ':'.
    member.path = std::string(line.substr(second + 1));
    memberships.push_back(std::move(member));
  }
  return memberships;
}

Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text) {
  text = trim_blanks(text);
  if (text == "max") return std::optional<std::uint64_t>();
  auto value = parse_number(text);
  if (!value) return fail(value.error());
  if (*value >= kUnlimitedFloor) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(*value);
}

std::optional<std::uint64_t> flat_keyed_value(std::string_view text, std::string_view key) {
  std::optional<std::uint64_t> found;
  while (!text.empty()) {
    const std::string_view line = trim_blanks(next_line(text));
    if (line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ' ') continue;
    auto value = parse_number(line.substr(key.size() + 1));
    found = value ? std::optional(*value) : std::nullopt;  // the last line of that key, as a map
  }
  return found;
}

Result<std::map<std::string, std::uint64_t, std::less<>>> parse_flat_keyed(std::string_view text) {
  std::map<std::string, std::uint64_t, std::less<>> values;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = trim_blanks(next_line(text));
    ++line_number;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return fail(Error::parse(fmt::format("line {}: expected 'key value'", line_number)));
    }
    auto value = parse_number(line.substr(space + 1));
    if (!value)
      return fail(Error::parse(fmt::format("line {}: {}", line_number, value.error().message)));
    values.insert_or_assign(std::string(line.substr(0, space)), *value);
  }
  return values;
}

std::optional<std::uint64_t> MemoryCgroup::headroom_bytes() const {
  if (!effective_limit_bytes) return std::nullopt;
  return *effective_limit_bytes > usage_bytes ? *effective_limit_bytes - usage_bytes : 0;
}

Result<CgroupLocation> find_cgroup(const Context& context, std::string_view pid,
                                   std::string_view controller,
                                   const std::vector<MountEntry>* mounts) {
  const SysRoot& root = context.root;
  const std::string process(pid);
  auto cgroup_text = root.read(root.proc(process + "/cgroup"), 64 * 1024);
  if (!cgroup_text) return fail(cgroup_text.error());
  auto memberships = parse_proc_cgroup(*cgroup_text);
  if (!memberships) return fail(memberships.error());
  if (mounts != nullptr) return locate_cgroup(*memberships, *mounts, controller);
  auto mountinfo_text = root.read(root.proc(process + "/mountinfo"), 4 << 20);
  if (!mountinfo_text) return fail(mountinfo_text.error());
  auto own_mounts = parse_mountinfo(*mountinfo_text);
  if (!own_mounts) return fail(own_mounts.error());
  return locate_cgroup(*memberships, *own_mounts, controller);
}

Result<MemoryCgroup> read_memory_cgroup(const Context& context, std::string_view pid,
                                        const std::vector<MountEntry>* mounts, bool details) {
  auto located = find_cgroup(context, pid, "memory", mounts);
  if (!located) return fail(located.error());
  return read_memory_cgroup_at(context, *located, details);
}

Result<MemoryCgroup> read_memory_cgroup_at(const Context& context, const CgroupLocation& located,
                                           bool details) {
  const SysRoot& root = context.root;
  const bool v1 = located.version == CgroupVersion::kV1;
  MemoryCgroup cgroup;
  cgroup.version = located.version;
  cgroup.path = located.path;
  cgroup.directory = root.host(located.directory);
  const char* limit_file = v1 ? "memory.limit_in_bytes" : "memory.max";
  const char* usage_file = v1 ? "memory.usage_in_bytes" : "memory.current";
  const auto usage = read_number(context, cgroup.directory.native(), usage_file);
  const auto limit_text = read_file(context, cgroup.directory.native(), limit_file);
  if (!usage && !limit_text) {
    // The v2 root cgroup has neither file, and a cgroup without the memory
    // controller enabled has no memory.* files: no limit applies here.
    return fail(
        Error{Error::Code::kNotFound, fmt::format("{}: no {} (memory controller not enabled here)",
                                                  located.directory.string(), usage_file)});
  }
  cgroup.usage_bytes = usage.value_or(0);
  cgroup.limit_bytes = limit_of(limit_text);
  if (details) {
    cgroup.peak_bytes = read_number(context, cgroup.directory.native(),
                                    v1 ? "memory.max_usage_in_bytes" : "memory.peak");
  }
  // v1 states the hierarchical limit only in memory.stat (see below); without
  // details it is read only when the ancestors cannot be walked (the cgroup is
  // the mount's root, as in a v1 container), because on a v1 host memory.stat
  // sums every descendant cgroup and is the costliest file of a sample.
  const std::filesystem::path top = root.host(located.mount_point);
  const bool ancestors_hidden = cgroup.directory == top;
  if (auto stat = details || (v1 && ancestors_hidden)
                      ? read_file(context, cgroup.directory.native(), "memory.stat")
                      : std::nullopt) {
    if (auto values = parse_flat_keyed(*stat)) cgroup.stat = std::move(*values);
  }

  // The smallest limit on the way up to the mount's root: a pod's container
  // may be unlimited while the pod slice above it is not.
  cgroup.effective_limit_bytes = cgroup.limit_bytes;
  cgroup.effective_limit_directory = cgroup.directory;
  // Up by the text (parent_path builds a path object a level).
  std::string dir = cgroup.directory.native();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  while (dir != top.native() && dir.size() > top.native().size()) {
    const std::size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos) break;
    dir.resize(std::max<std::size_t>(slash, 1));
    const auto limit = read_limit(context, dir, limit_file);
    if (limit && (!cgroup.effective_limit_bytes || *limit < *cgroup.effective_limit_bytes)) {
      cgroup.effective_limit_bytes = limit;
      cgroup.effective_limit_directory = dir;
    }
  }
  if (v1) {
    // Without a cgroup namespace the ancestors may be hidden; v1 states the
    // hierarchical limit itself.
    const auto found = cgroup.stat.find("hierarchical_memory_limit");
    if (found != cgroup.stat.end() && found->second < kUnlimitedFloor &&
        (!cgroup.effective_limit_bytes || found->second < *cgroup.effective_limit_bytes)) {
      cgroup.effective_limit_bytes = found->second;
    }
    const auto memsw =
        details ? read_limit(context, cgroup.directory.native(), "memory.memsw.limit_in_bytes")
                : std::nullopt;
    if (memsw && cgroup.limit_bytes && *memsw >= *cgroup.limit_bytes) {
      cgroup.swap_limit_bytes = *memsw - *cgroup.limit_bytes;
    }
    cgroup.oom_kills =
        keyed(read_file(context, cgroup.directory.native(), "memory.oom_control"), "oom_kill");
  } else {
    if (details)
      cgroup.swap_limit_bytes = read_limit(context, cgroup.directory.native(), "memory.swap.max");
    const auto events = read_file(context, cgroup.directory.native(), "memory.events");
    cgroup.oom_kills = keyed(events, "oom_kill");
    cgroup.oom_events = keyed(events, "oom");
  }
  return cgroup;
}

}  // namespace headroom
