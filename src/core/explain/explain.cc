#include "core/explain/explain.h"

#include "core/explain/log_reader.h"
#include "core/signatures/analyzer.h"

namespace headroom {

Result<Explanation> explain_logs(const Context& context, const Catalog& catalog,
                                 std::span<const std::string> inputs, bool confirm_on_host,
                                 int stdin_fd) {
  LogAnalyzer analyzer(catalog);
  for (const std::string& input : inputs) {
    const std::string source = inputs.size() > 1 ? input : "";
    auto fed =
        input == "-" ? feed_fd(analyzer, stdin_fd, source) : feed_file(analyzer, input, source);
    if (!fed) return fail(fed.error());
  }
  Explanation explanation;
  explanation.diagnosis = analyzer.finish();
  const bool confirm = confirm_on_host && explanation.diagnosis.verdict() != nullptr;
  explanation.conclusion = conclude(confirm ? &context : nullptr, explanation.diagnosis);
  return explanation;
}

}  // namespace headroom
