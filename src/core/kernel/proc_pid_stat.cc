#include "core/kernel/proc_pid_stat.h"

#include <fcntl.h>

#include <cerrno>
#include <charconv>
#include <string_view>

namespace headroom {

namespace {

constexpr unsigned long kPfKthread = 0x00200000;  // include/linux/sched.h

/// The fields of /proc/<pid>/stat after the ")" that ends comm (comm may hold spaces and
/// parentheses): state is field 3, ppid 4, flags 9.
std::string_view after_comm(std::string_view stat) {
  const std::size_t close = stat.rfind(')');
  return close == std::string_view::npos ? std::string_view() : stat.substr(close + 1);
}

/// Field `n` (1-based, as in proc(5)) of a stat line; fields 1 and 2 are pid and comm.
std::string_view stat_field(std::string_view stat, int n) {
  std::string_view rest = after_comm(stat);
  for (int field = 3; field <= n; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const std::size_t end = rest.find(' ');
    const std::string_view value = rest.substr(0, end);
    if (field == n) return value;
    if (end == std::string_view::npos) return {};
    rest.remove_prefix(end);
  }
  return {};
}

template <typename T>
bool parse(std::string_view text, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool is_kernel_thread(const Context& context, int pid) {
  const auto stat = context.root.read(context.root.proc(std::to_string(pid) + "/stat"), 4096);
  if (!stat) return false;
  unsigned long flags = 0;
  return parse(stat_field(*stat, 9), flags) && (flags & kPfKthread) != 0;
}

bool sees_initial_pid_namespace(const Context& context) {
  const auto stat = context.root.read(context.root.proc("2/stat"), 4096);
  if (!stat) return false;
  int ppid = -1;
  return stat->find("(kthreadd)") != std::string::npos && parse(stat_field(*stat, 4), ppid) &&
         ppid == 0 && is_kernel_thread(context, 2);
}

}  // namespace headroom
