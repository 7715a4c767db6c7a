#include "core/operand.h"

#include <fmt/format.h>

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

}  // namespace headroom
