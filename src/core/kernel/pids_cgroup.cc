// pids cgroup reader; see pids_cgroup.h for the sources and their quirks.
#include "core/kernel/pids_cgroup.h"

#include <fmt/format.h>

#include "core/kernel/kernel_tasks.h"
#include "core/kernel/mountinfo.h"

namespace headroom {

namespace {

std::optional<std::uint64_t> read_count(const Context& context, const std::filesystem::path& dir,
                                        std::string_view name) {
  auto text = context.root.read(dir / std::string(name), 4096);
  if (!text) return std::nullopt;
  auto number = parse_sysctl_number(*text);  // one decimal number, like a sysctl file
  if (!number) return std::nullopt;
  return *number;
}

}  // namespace

std::optional<std::uint64_t> PidsCgroup::room() const {
  if (!limit) return std::nullopt;
  return *limit > limit_current ? *limit - limit_current : 0;
}

Result<PidsCgroup> read_pids_cgroup(const Context& context, std::string_view pid) {
  const SysRoot& root = context.root;
  auto place = find_cgroup(context, pid, "pids");
  if (!place) return fail(place.error());

  PidsCgroup cgroup;
  cgroup.version = place->version;
  cgroup.path = place->path;
  cgroup.directory = root.host(place->directory);
  const std::filesystem::path top = root.host(place->mount_point);
  const auto current = read_count(context, cgroup.directory, "pids.current");
  if (!current && cgroup.directory == top) {
    cgroup.hierarchy_root = true;  // the root cgroup has no pids files and no limit
    return cgroup;
  }
  if (!current) {
    // The v2 root cgroup, or a v2 cgroup without the pids controller enabled.
    return fail(Error{Error::Code::kNotFound,
                      fmt::format("{}: no pids.current (pids controller not enabled here)",
                                  place->directory.string())});
  }
  cgroup.current = *current;
  for (std::filesystem::path dir = cgroup.directory;; dir = dir.parent_path()) {
    auto max_text = root.read(dir / "pids.max", 4096);
    const auto limit = max_text ? parse_cgroup_limit(*max_text)
                                : Result<std::optional<std::uint64_t>>(std::nullopt);
    const auto used = read_count(context, dir, "pids.current");
    if (limit && *limit && used) {
      const std::uint64_t room = **limit > *used ? **limit - *used : 0;
      if (!cgroup.limit || room < *cgroup.room()) {
        cgroup.limit = **limit;
        cgroup.limit_current = *used;
        cgroup.limit_directory = dir;
      }
    }
    if (dir == top || dir.native().size() <= top.native().size()) break;
  }
  return cgroup;
}

}  // namespace headroom
