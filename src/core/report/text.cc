#include "core/report/text.h"

#include <fmt/format.h>

#include "core/text_out.h"

namespace headroom {

namespace {

std::string upper(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

std::string evidence_line(const Finding& finding) {
  std::string line;
  for (const Evidence& evidence : finding.evidence) {
    if (!line.empty()) line += ", ";
    // Long facts (lists of kills, paths) stay in --json; one screen line each here.
    constexpr std::size_t kMaxValue = 120;
    std::string value = format_value(evidence);
    if (value.size() > kMaxValue) value = value.substr(0, kMaxValue) + "...";
    line += evidence.name + " " + value;
  }
  return line;
}

}  // namespace

std::string render_finding(const Finding& finding, const TextStyle& style) {
  const std::string label = fmt::format("{:<8}", to_string(finding.severity));
  std::string out = fmt::format("{}{}{} {:<17} {}\n", severity_color(finding.severity, style),
                                label, color_reset(style), finding.id, printable(finding.summary));
  const bool problem =
      finding.severity == Severity::kWarn || finding.severity == Severity::kCritical;
  const std::string indent(27, ' ');
  if ((problem || style.verbose) && !finding.evidence.empty()) {
    out += fmt::format("{}evidence: {}\n", indent, printable(evidence_line(finding)));
  }
  if ((problem && style.verbose) && !finding.why.empty()) {
    out += fmt::format("{}why: {}\n", indent, printable(finding.why));
  }
  if (problem) {
    for (std::size_t i = 0; i < finding.remedy.size(); ++i) {
      out +=
          fmt::format("{}{} {}\n", indent, i == 0 ? "fix:" : "    ", printable(finding.remedy[i]));
    }
  }
  return out;
}

std::string render_text(const Report& report, const TextStyle& style) {
  int counts[4] = {0, 0, 0, 0};
  for (const Finding& finding : report.findings) ++counts[rank(finding.severity)];
  const Severity verdict = report.verdict();
  std::string out =
      fmt::format("{}{}{}: {} critical, {} warning{}, {} ok{} ({})\n\n",
                  severity_color(verdict, style), upper(to_string(verdict)), color_reset(style),
                  counts[rank(Severity::kCritical)], counts[rank(Severity::kWarn)],
                  counts[rank(Severity::kWarn)] == 1 ? "" : "s", counts[rank(Severity::kOk)],
                  counts[rank(Severity::kUnknown)] > 0
                      ? fmt::format(", {} unknown", counts[rank(Severity::kUnknown)])
                      : "",
                  report.environment.empty() ? "host" : report.environment);
  for (const Finding& finding : report.findings) out += render_finding(finding, style);
  return out;
}

}  // namespace headroom
