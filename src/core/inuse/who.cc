#include "core/inuse/who.h"

#include <fmt/format.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/units.h"

namespace headroom {

std::vector<const Holder*> WhoAnswer::holders(std::size_t i) const {
  return index.holders_under(targets[i].operand.path, targets[i].id);
}

bool WhoAnswer::any() const {
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!holders(i).empty()) return true;
  }
  return false;
}

Result<WhoAnswer> who(const Context& context, std::span<const std::string> paths,
                      bool with_cmdline) {
  ScanOptions options;
  options.include_sysv = false;
  options.include_cmdline = with_cmdline;
  std::vector<WhoTarget> targets;
  for (const std::string& text : paths) {
    auto operand = resolve_operand(context, text);
    if (!operand) return fail(Error{operand.error().code, "who: " + operand.error().message});
    auto id = file_id(context.root.host(operand->path));
    if (!id) return fail(Error::from_errno(errno, "who " + text));
    options.path_prefixes.push_back(operand->path);
    targets.push_back({std::move(*operand), *id});
  }
  auto index = scan_in_use(context, options);
  if (!index) return fail(index.error());
  return WhoAnswer{std::move(targets), std::move(*index)};
}

}  // namespace headroom
