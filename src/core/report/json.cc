#include "core/report/json.h"

namespace headroom {

nlohmann::ordered_json to_json(const Evidence& evidence) {
  nlohmann::ordered_json value;
  std::visit([&](const auto& raw) { value = raw; }, evidence.value);
  nlohmann::ordered_json result = {{"name", evidence.name}, {"value", value}};
  if (!evidence.unit.empty()) result["unit"] = evidence.unit;
  result["text"] = format_value(evidence);
  return result;
}

nlohmann::ordered_json to_json(const Finding& finding) {
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const Evidence& item : finding.evidence) evidence.push_back(to_json(item));
  nlohmann::ordered_json result = {
      {"id", finding.id},
      {"subject", finding.subject},
      {"severity", std::string(to_string(finding.severity))},
      {"summary", finding.summary},
      {"evidence", evidence},
      {"why", finding.why},
      {"remedy", finding.remedy},
  };
  if (finding.severity == Severity::kUnknown) result["reason"] = finding.reason;
  return result;
}

nlohmann::ordered_json to_json(const Report& report) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const Finding& finding : report.findings) findings.push_back(to_json(finding));
  return {
      {"verdict", std::string(to_string(report.verdict()))},
      {"environment", report.environment},
      {"findings", findings},
  };
}

nlohmann::ordered_json findings_to_json(const Report& report) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Finding& finding : report.findings) out.push_back(to_json(finding));
  return out;
}

}  // namespace headroom
