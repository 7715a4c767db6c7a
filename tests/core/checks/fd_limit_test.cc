// fd.limit and fd.system on recorded trees: fd_limit_256 (ulimit -Sn 256,
// hard 20000) and bare_host (20000/20000, file-nr 1958 of 2466177).
#include <gtest/gtest.h>

#include <fstream>

#include "core/checks/check.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;

std::vector<Finding> run(const Context& context, const CheckOptions& options,
                         RuntimeKind kind = RuntimeKind::kHost) {
  Runtime runtime;
  runtime.kind = kind;
  return check_fd_limit(CheckInput{context, options, runtime});
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(CheckFdLimit, LowDefaultLimitWithWorkersWarns) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 2;
  const auto findings = run(fixture_context("fd_limit_256", syscalls), options);
  ASSERT_EQ(findings.size(), 2U);
  const Finding& limit = findings[0];
  EXPECT_EQ(limit.id, "fd.limit");
  EXPECT_EQ(limit.severity, Severity::kWarn) << limit.summary;
  EXPECT_EQ(evidence_text(limit, "soft_limit"), "256");
  EXPECT_EQ(evidence_text(limit, "hard_limit"), "20000");
  EXPECT_EQ(evidence_text(limit, "estimated_need"), "89");  // 64 + 4x2 + 5 + (2x2 + 2) x 2
  EXPECT_EQ(evidence_text(limit, "minimum_need"), "22");    // 8 + 4x2 + 2 + 2 x 2
  EXPECT_NE(limit.summary.find("about 167 kept tensors exhaust it"), std::string::npos)
      << limit.summary;
  EXPECT_NE(joined(limit.remedy).find("ulimit -n 20000"), std::string::npos);
  EXPECT_NE(joined(limit.remedy).find("set_sharing_strategy('file_system')"), std::string::npos);
}

TEST(CheckFdLimit, LimitBelowTheTypicalNeedButAboveTheMinimumWarns) {
  // Issue 20 #9: a 4-worker job ran 400 steps at ulimit -n 48; a limit of 100 was critical.
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 16;
  options.prefetch = 4;  // typical 64 + 64 + 5 + (64 + 2) x 2 = 265 > 256; minimum 78
  const Finding limit = run(fixture_context("fd_limit_256", syscalls), options).front();
  EXPECT_EQ(limit.severity, Severity::kWarn) << limit.summary;
  EXPECT_NE(limit.summary.find("covers the job's minimum of 78 but not its estimated need 265"),
            std::string::npos)
      << limit.summary;
}

TEST(CheckFdLimit, LimitBelowTheMinimumIsCritical) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 60;
  options.tensors_per_batch = 3;  // minimum 8 + 4 x 60 + 2 + 2 x 3 = 256: the limit holds it
  EXPECT_EQ(run(fixture_context("fd_limit_256", syscalls), options).front().severity,
            Severity::kWarn);
  options.base_fds = 9;  // one fd more held before the loader starts: 257 > 256
  const Finding limit = run(fixture_context("fd_limit_256", syscalls), options).front();
  EXPECT_EQ(limit.severity, Severity::kCritical) << limit.summary;
  EXPECT_NE(limit.summary.find("open files limit 256 is below the 257 fds the job needs at least"),
            std::string::npos)
      << limit.summary;
  EXPECT_EQ(evidence_text(limit, "tensors_per_batch"), "3");
  EXPECT_NE(joined(run(fixture_context("fd_limit_256", syscalls), options, RuntimeKind::kDocker)
                       .front()
                       .remedy)
                .find("docker run --ulimit nofile=65536:65536"),
            std::string::npos);
}

TEST(CheckFdLimit, HighLimitIsOk) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 8;
  const auto findings = run(fixture_context("bare_host", syscalls), options);
  EXPECT_EQ(findings[0].severity, Severity::kOk) << findings[0].summary;
  EXPECT_EQ(evidence_text(findings[0], "source"), "/proc/self/limits");
  EXPECT_EQ(findings[1].id, "fd.system");
  EXPECT_EQ(findings[1].severity, Severity::kOk);
  EXPECT_EQ(evidence_text(findings[1], "allocated_handles"), "1958");
}

TEST(CheckFdLimit, NoWorkersNeedNoMoreThanTheDefault) {
  FakeSyscalls syscalls;
  EXPECT_EQ(run(fixture_context("fd_limit_256", syscalls), CheckOptions{}).front().severity,
            Severity::kOk);
}

TEST(CheckFdLimit, SystemWideHandlesNearFileMax) {
  FakeSyscalls syscalls;
  const testing::ScratchRoot root("bare_host");
  const Context context = root.context(syscalls);
  const auto write_file_nr = [&](std::string_view text) {
    std::ofstream(root.path() / "proc/sys/fs/file-nr", std::ios::trunc) << text;
  };
  write_file_nr("8600\t0\t10000\n");
  EXPECT_EQ(run(context, CheckOptions{})[1].severity, Severity::kWarn);
  write_file_nr("9600\t0\t10000\n");
  const Finding critical = run(context, CheckOptions{})[1];
  EXPECT_EQ(critical.severity, Severity::kCritical);
  EXPECT_NE(joined(critical.remedy).find("sysctl -w fs.file-max=20000"), std::string::npos);
}

TEST(CheckFdLimit, UnreadableLimitsOfAnotherProcessAreUnknown) {
  FakeSyscalls syscalls;
  Context context = fixture_context("bare_host", syscalls);
  context.pid = "999999";
  const Finding limit = run(context, CheckOptions{}).front();
  EXPECT_EQ(limit.severity, Severity::kUnknown);
  EXPECT_NE(limit.reason.find("limits"), std::string::npos) << limit.reason;
}

}  // namespace
}  // namespace headroom
