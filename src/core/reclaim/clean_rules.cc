#include "core/reclaim/clean_rules.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>

namespace headroom {

bool protected_tmp_name(std::string_view name) {
  constexpr std::array<std::string_view, 6> kExact = {
      ".X11-unix", ".ICE-unix", ".font-unix", ".XIM-unix", ".Test-unix", "snap-private-tmp"};
  for (std::string_view exact : kExact) {
    if (name == exact) return true;
  }
  return name.substr(0, 16) == "systemd-private-";
}

std::chrono::seconds minimum_age(const CleanOptions& options, bool tmp) {
  if (options.older_than) return *options.older_than;
  return tmp ? kDefaultTmpAge : std::chrono::seconds{0};
}

std::vector<int> blocking_unreadable(const InUseIndex& index, const CleanOptions& options) {
  std::vector<int> blocking;
  for (int pid : index.unreadable_pids()) {
    if (std::find(options.ignore_unreadable.begin(), options.ignore_unreadable.end(), pid) ==
        options.ignore_unreadable.end()) {
      blocking.push_back(pid);
    }
  }
  return blocking;
}

std::string held_reason(const InUseIndex& index, const std::vector<int>& pids) {
  std::string text = "in use by pid ";
  for (std::size_t i = 0; i < pids.size() && i < 5; ++i) {
    const ProcessInfo* process = index.process(pids[i]);
    text += fmt::format("{}{} ({})", i == 0 ? "" : ", ", pids[i],
                        process != nullptr ? process->command : "?");
  }
  if (pids.size() > 5) text += fmt::format(" and {} more", pids.size() - 5);
  return text;
}

std::string quarantine_name(std::uint64_t counter) {
  return fmt::format(".headroom-clean-{}-{}", ::getpid(), counter);
}

}  // namespace headroom
