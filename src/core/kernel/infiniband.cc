// /sys/class/infiniband; see infiniband.h.
#include "core/kernel/infiniband.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace headroom {

Result<std::vector<std::string>> read_rdma_devices(const Context& context) {
  const std::filesystem::path directory = context.root.sys("class/infiniband");
  std::vector<std::string> names;
  std::error_code error;
  // The error_code overloads: a device unbound while listing is not worth an exception.
  for (std::filesystem::directory_iterator entry(directory, error), end; !error && entry != end;
       entry.increment(error)) {
    names.push_back(entry->path().filename().string());
  }
  if (error == std::errc::no_such_file_or_directory) return std::vector<std::string>{};
  if (error)
    return fail(Error::from_errno(error.value(), context.root.display(directory).string()));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace headroom
