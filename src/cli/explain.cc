// headroom explain: read failed jobs' logs and name the root cause.
// Exit 0 when a cause was found, 1 when none, 2 when the input or catalog could not be read.

#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/explain/host.h"
#include "core/explain/log_reader.h"
#include "core/explain/render.h"
#include "core/signatures/analyzer.h"
#include "core/signatures/catalog.h"

namespace headroom::cli {

namespace {

struct ExplainFlags {
  std::vector<std::string> inputs;
  std::vector<std::string> catalogs;
  bool no_host = false;
  bool dump_patterns = false;
};

int run_explain(const ExplainFlags& flags, const Globals& globals) {
  std::vector<std::filesystem::path> dirs(flags.catalogs.begin(), flags.catalogs.end());
  auto catalog = load_catalog(dirs);
  if (!catalog) return usage_error(catalog.error().message);
  if (flags.dump_patterns) {
    std::cout << patterns_as_ere(*catalog);
    return kExitOk;
  }
  std::vector<std::string> inputs = flags.inputs;
  if (inputs.empty()) {
    if (::isatty(STDIN_FILENO) == 1) {
      return usage_error("explain: give a log file, or pipe one in (headroom explain - < job.log)");
    }
    inputs.emplace_back("-");
  }
  LogAnalyzer analyzer(*catalog);
  for (const std::string& input : inputs) {
    // Evidence names the file only when there are several.
    const std::string source = inputs.size() > 1 ? input : "";
    auto fed =
        input == "-" ? feed_fd(analyzer, STDIN_FILENO, source) : feed_file(analyzer, input, source);
    if (!fed) return usage_error(fed.error().message);
  }
  Diagnosis diagnosis = analyzer.finish();
  const Context context = make_context(globals);
  const bool confirm = !flags.no_host && diagnosis.verdict() != nullptr;
  const Conclusion conclusion = conclude(confirm ? &context : nullptr, diagnosis);
  if (globals.json) {
    std::cout << explain_to_json(diagnosis, conclusion.host, conclusion.remedy).dump(2) << "\n";
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
  return [flags, &globals]() { return run_explain(*flags, globals); };
}

}  // namespace headroom::cli
