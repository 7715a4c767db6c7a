// headroom explain: read failed jobs' logs and name the root cause.
// Exit 0 when a cause was found, 1 when none, 2 when the input or catalog could not be read.

#include "core/explain/explain.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/explain/render.h"
#include "core/signatures/analyzer.h"
#include "core/signatures/catalog.h"
#include "core/text_out.h"

namespace headroom::cli {

namespace {

struct ExplainFlags {
  std::vector<std::string> inputs;
  std::vector<std::string> catalogs;
  bool no_host = false;
  bool dump_patterns = false;
  bool dump_literals = false;
};

int run_explain(const ExplainFlags& flags, const Globals& globals) {
  std::vector<std::filesystem::path> dirs(flags.catalogs.begin(), flags.catalogs.end());
  auto catalog = load_catalog(dirs);
  if (!catalog) return usage_error(catalog.error().message);
  if (flags.dump_patterns) {
    std::cout << patterns_as_ere(*catalog);
    return kExitOk;
  }
  if (flags.dump_literals) {
    std::cout << literals_as_lines(*catalog);
    return kExitOk;
  }
  std::vector<std::string> inputs = flags.inputs;
  if (inputs.empty()) {
    if (::isatty(STDIN_FILENO) == 1) {
      return usage_error("explain: give a log file, or pipe one in (headroom explain - < job.log)");
    }
    inputs.emplace_back("-");
  }
  const Context context = make_context(globals);
  auto explained = explain_logs(context, *catalog, inputs, !flags.no_host, STDIN_FILENO);
  if (!explained) return usage_error(explained.error().message);
  const Diagnosis& diagnosis = explained->diagnosis;
  const Conclusion& conclusion = explained->conclusion;
  if (globals.json) {
    std::cout << json_text(explain_to_json(diagnosis, conclusion.host, conclusion.remedy), 2)
              << "\n";
  } else {
    std::cout << render_explain_text(diagnosis, conclusion.host, conclusion.remedy,
                                     stdout_style(globals));
  }
  return diagnosis.verdict() != nullptr ? kExitOk : kExitFindings;
}

}  // namespace

std::function<int()> setup_explain(CLI::App& app, const Globals& globals) {
  auto flags = std::make_shared<ExplainFlags>();
  app.add_option("logs", flags->inputs, "log files (plain or .gz); '-' or nothing reads stdin");
  app.add_flag("--no-host", flags->no_host,
               "do not confirm on this host (the log comes from another machine)");
  app.add_option("--catalog", flags->catalogs,
                 "also load the *.toml signatures in this directory (docs/catalog.md)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingPath);
  app.add_flag("--dump-patterns", flags->dump_patterns,
               "print the catalog's patterns as grep -E lines")
      ->group("");  // hidden: benchmark and debugging aid
  app.add_flag("--dump-literals", flags->dump_literals,
               "print the literals the scan looks for, one a line (\\n for a newline)")
      ->group("");  // hidden: bench/explain/floor.cc reads them
  return [flags, &globals]() { return run_explain(*flags, globals); };
}

}  // namespace headroom::cli
