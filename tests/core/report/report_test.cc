#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/golden.h"
#include "core/report/json.h"
#include "core/report/text.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::expect_golden;

Report sample_report() {
  Report report;
  report.environment = "docker";
  Finding ok;
  ok.id = "disk.space";
  ok.subject = "/data";
  ok.severity = Severity::kOk;
  ok.summary = "/data: 80.0 GiB free of 252.0 GiB (68.3% used)";
  ok.add("avail_bytes", std::uint64_t{80} * kGiB, "bytes");
  Finding critical;
  critical.id = "shm.capacity";
  critical.subject = "/dev/shm";
  critical.severity = Severity::kCritical;
  critical.summary = "/dev/shm has 64.0 MiB free of 64.0 MiB but the job needs 512.0 MiB";
  critical.why = "workers die of SIGBUS";
  critical.add("size_bytes", std::uint64_t{64} * kMiB, "bytes").add("fstype", std::string("tmpfs"));
  critical.remedy = {"restart the container with: docker run --shm-size=564m ...",
                     "or share the host's: docker run --ipc=host ..."};
  report.findings = {ok, critical,
                     unknown_finding("kernel.oom", "", "/dev/kmsg: Permission denied")};
  report.sort_worst_first();
  return report;
}

TEST(Report, VerdictIsTheWorstKnownSeverity) {
  Report report = sample_report();
  EXPECT_EQ(report.verdict(), Severity::kCritical);
  EXPECT_EQ(report.findings.front().id, "shm.capacity");
  Report unknown_only;
  unknown_only.findings = {unknown_finding("kernel.oom", "", "no log")};
  EXPECT_EQ(unknown_only.verdict(), Severity::kOk);
}

TEST(RenderText, MatchesGoldenWithoutColour) {
  expect_golden("check_report.txt", render_text(sample_report(), TextStyle{false, false}));
}

TEST(RenderText, ColoursOnlyWhenAsked) {
  EXPECT_EQ(render_text(sample_report(), TextStyle{false, false}).find('\x1b'), std::string::npos);
  EXPECT_NE(render_text(sample_report(), TextStyle{true, false}).find("\x1b[1;31m"),
            std::string::npos);
}

TEST(RenderFinding, CutsLongEvidenceButJsonKeepsIt) {
  Finding finding;
  finding.id = "kernel.oom";
  finding.severity = Severity::kWarn;
  finding.summary = "3 OOM kills";
  finding.add("kills", std::string(500, 'x'));
  const std::string text = render_finding(finding, TextStyle{});
  EXPECT_NE(text.find(std::string(120, 'x') + "..."), std::string::npos);
  EXPECT_EQ(text.find(std::string(121, 'x')), std::string::npos);
  EXPECT_EQ(to_json(finding)["evidence"][0]["value"].get<std::string>().size(), 500u);
}

TEST(ToJson, MatchesGolden) {
  expect_golden("check_report.json", to_json(sample_report()).dump(2) + "\n");
}

}  // namespace
}  // namespace headroom
