#include "core/signatures/signals.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

namespace headroom {

namespace {

std::string lower_trimmed(std::string_view text) {
  while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) != 0))
    text.remove_prefix(1);
  while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) != 0 ||
                           text.back() == '.' || text.back() == ':' || text.back() == ')'))
    text.remove_suffix(1);
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string lower(const char* text) {
  return text == nullptr ? std::string() : lower_trimmed(text);
}

}  // namespace

std::optional<int> signal_number(std::string_view text) {
  std::string word = lower_trimmed(text);
  for (const std::string_view prefix : {"signals.", "signal "}) {
    if (word.rfind(prefix, 0) == 0) word.erase(0, prefix.size());
  }
  if (!word.empty() && (word[0] == '-' || (word[0] >= '0' && word[0] <= '9'))) {
    int number = 0;
    const char* begin = word.data() + (word[0] == '-' ? 1 : 0);
    const auto [end, error] = std::from_chars(begin, word.data() + word.size(), number);
    if (error != std::errc() || number <= 0 || number >= NSIG) return std::nullopt;
    // "7 (Bus error)": the number decides.
    if (end != word.data() + word.size() && *end != ' ' && *end != '(') return std::nullopt;
    return number;
  }
  if (word.rfind("sig", 0) == 0 && word.size() > 3 && word[3] != 'n') word.erase(0, 3);
  // zsh's own words (Src/signames2.awk) where they differ from glibc's strsignal.
  if (word == "abort") return SIGABRT;
  if (word == "kill signal") return SIGKILL;
  if (word == "cpu limit exceeded") return SIGXCPU;
  for (int number = 1; number < SIGRTMIN; ++number) {
    if (word == lower(::sigabbrev_np(number)) || word == lower(::sigdescr_np(number)))
      return number;
  }
  return std::nullopt;
}

std::optional<int> signal_from_status(int status) {
  if (status > 128 && status < 160) return status - 128;
  if (status == 256 - SIGKILL || status == 256 - SIGBUS) return 256 - status;  // sys.exit(-N)
  return std::nullopt;
}

}  // namespace headroom
