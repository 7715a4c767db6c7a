#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/globals.h"
#include "core/syscalls.h"

extern char** environ;

namespace headroom::cli {

namespace {

bool color_allowed(const Globals& globals, int fd) {
  if (globals.no_color) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(fd) == 1;
}

}  // namespace

Context make_context(const Globals& globals) {
  static const RealSyscalls kSyscalls;
  Context context{SysRoot(globals.root), &kSyscalls, {}, "/", "self"};
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    context.environment.emplace(std::string(text.substr(0, equals)),
                                std::string(text.substr(equals + 1)));
  }
  std::error_code error;
  const std::filesystem::path cwd = std::filesystem::current_path(error);
  if (!error) context.working_directory = cwd;
  return context;
}

TextStyle stdout_style(const Globals& globals) {
  return TextStyle{color_allowed(globals, STDOUT_FILENO), globals.verbose};
}

bool stderr_color(const Globals& globals) { return color_allowed(globals, STDERR_FILENO); }

Result<void> check_host_root(const std::string& root) {
  std::error_code error;
  if (std::filesystem::is_directory(root, error)) return {};
  return fail(Error::invalid(
      fmt::format("--host-root {}: {}", root, error ? error.message() : "not a directory")));
}

int usage_error(const std::string& message) {
  fmt::print(stderr, "headroom: {}\n", message);
  return kExitUsage;
}

}  // namespace headroom::cli
