#include "core/operand.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

namespace headroom {

std::string Operand::note() const {
  if (!followed()) return "";
  return fmt::format("{} -> {} (a symlink on the command line is followed, as du -H does)",
                     given.string(), path.string());
}

Result<Operand> resolve_operand(const Context& context, const std::string& text) {
  std::filesystem::path given =
      text.empty() ? context.working_directory : std::filesystem::path(text);
  if (given.is_relative()) given = context.working_directory / given;
  given = given.lexically_normal();
  if (!given.has_filename() && given != given.root_path()) given = given.parent_path();
  auto resolved = context.root.resolve(given);
  if (!resolved) return fail(resolved.error());
  return Operand{given, *resolved};
}

Result<std::vector<std::filesystem::path>> resolve_job_dirs(
    const std::vector<std::string>& dirs, const std::filesystem::path& working_directory) {
  std::vector<std::filesystem::path> resolved;
  for (const std::string& dir : dirs) {
    std::filesystem::path path = dir;
    if (path.is_relative()) path = working_directory / path;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return fail(Error::from_errno(errno, dir));
    if (!S_ISDIR(info.st_mode))
      return fail(Error::invalid(fmt::format("{}: not a directory", dir)));
    resolved.push_back(path.lexically_normal());
  }
  if (resolved.empty()) resolved.push_back(working_directory);
  return resolved;
}

}  // namespace headroom
