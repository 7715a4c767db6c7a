#pragma once
// A Context over a recorded tree in tests/fixtures/<scenario>/ with a fake
// Syscalls; the scenario's "environ" file (KEY=value lines), when present,
// becomes the job's environment.

#include <fstream>
#include <string>

#include "core/context.h"
#include "core/finding.h"
#include "fake_syscalls.h"

namespace headroom::testing {

/// The rooted path of a fixture scenario.
inline std::filesystem::path fixture_path(std::string_view scenario) {
  return std::filesystem::path(HEADROOM_FIXTURES) / std::string(scenario);
}

/// A Context rooted at the scenario, using `syscalls`.
inline Context fixture_context(std::string_view scenario, const Syscalls& syscalls) {
  Context context;
  context.root = SysRoot(fixture_path(scenario));
  context.syscalls = &syscalls;
  std::ifstream environ(fixture_path(scenario) / "environ");
  for (std::string line; std::getline(environ, line);) {
    const std::size_t equals = line.find('=');
    if (equals != std::string::npos)
      context.environment[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return context;
}

/// An evidence value as people read it ("64.0 MiB", "yes"), or "<missing>".
inline std::string evidence_text(const Finding& finding, std::string_view name) {
  for (const Evidence& item : finding.evidence) {
    if (item.name == name) return format_value(item);
  }
  return "<missing>";
}

/// The remedy lines of a finding, one per line, to search in.
inline std::string remedy_text(const Finding& finding) {
  std::string text;
  for (const std::string& line : finding.remedy) text += line + "\n";
  return text;
}

}  // namespace headroom::testing
