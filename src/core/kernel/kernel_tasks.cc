// kernel.threads-max, kernel.pid_max and the task count; see kernel_tasks.h.
#include "core/kernel/kernel_tasks.h"

#include <fmt/format.h>

#include <charconv>

#include "core/kernel/text.h"

namespace headroom {

namespace {

bool whole_number(std::string_view text, std::uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

Result<std::uint64_t> parse_loadavg_tasks(std::string_view text) {
  // Fields: 1, 5 and 15 minute averages, "runnable/total", last pid.
  text = trim_blanks(text);
  for (int field = 0; field < 3; ++field) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos) break;
    text = trim_blanks(text.substr(space));
  }
  const std::size_t slash = text.find('/');
  const std::size_t end = text.find(' ');
  std::uint64_t total = 0;
  if (slash == std::string_view::npos || slash > end ||
      !whole_number(text.substr(slash + 1, end == std::string_view::npos ? end : end - slash - 1),
                    total)) {
    return fail(Error::parse("loadavg: expected 'runnable/total' as the fourth field"));
  }
  return total;
}

Result<std::uint64_t> parse_sysctl_number(std::string_view text) {
  std::uint64_t value = 0;
  if (!whole_number(trim_blanks(text), value)) {
    return fail(Error::parse(fmt::format("not a number: '{}'", trim_blanks(text))));
  }
  return value;
}

Result<std::uint64_t> read_sysctl_number(const Context& context, std::string_view relative) {
  const auto path = context.root.proc(relative);
  auto text = context.root.read(path, 4096);
  if (!text) return fail(text.error());
  auto value = parse_sysctl_number(*text);
  if (!value)
    return fail(Error::parse(fmt::format("{}: {}", path.string(), value.error().message)));
  return value;
}

Result<KernelTasks> read_kernel_tasks(const Context& context) {
  KernelTasks kernel;
  auto threads_max = read_sysctl_number(context, "sys/kernel/threads-max");
  if (!threads_max) return fail(threads_max.error());
  auto pid_max = read_sysctl_number(context, "sys/kernel/pid_max");
  if (!pid_max) return fail(pid_max.error());
  const auto loadavg = context.root.proc("loadavg");
  auto text = context.root.read(loadavg, 4096);
  if (!text) return fail(text.error());
  auto tasks = parse_loadavg_tasks(*text);
  if (!tasks)
    return fail(Error::parse(fmt::format("{}: {}", loadavg.string(), tasks.error().message)));
  kernel.threads_max = *threads_max;
  kernel.pid_max = *pid_max;
  kernel.tasks = *tasks;
  return kernel;
}

}  // namespace headroom
