#include "core/live_context.h"

#include <utility>

#include "core/syscalls.h"

namespace headroom {

Context live_context(std::map<std::string, std::string> environment,
                     std::filesystem::path working_directory, std::filesystem::path root) {
  // One instance for the program: Context holds a plain pointer, and contexts
  // built here may outlive any caller's frame (the Python monitor thread).
  static const RealSyscalls kSyscalls;
  Context context{SysRoot(std::move(root)), &kSyscalls, std::move(environment), "/", "self"};
  if (!working_directory.empty()) context.working_directory = std::move(working_directory);
  return context;
}

}  // namespace headroom
