#include "core/signal_names.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>

#include <cctype>
#include <charconv>

namespace headroom {

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return fmt::format("signal {}", signal);
  return fmt::format("SIG{}", abbrev);
}

Result<int> parse_signal(std::string_view text) {
  std::string name(text);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
  for (int signal = 1; signal < NSIG; ++signal) {
    const char* abbrev = ::sigabbrev_np(signal);
    if (abbrev != nullptr && name == abbrev) return signal;
  }
  int number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error == std::errc() && end == text.data() + text.size() && number > 0 && number < NSIG) {
    return number;
  }
  return fail(Error::invalid(fmt::format("unknown signal '{}'", text)));
}

}  // namespace headroom
