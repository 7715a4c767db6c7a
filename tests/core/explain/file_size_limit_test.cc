// explain's host side of file_size_limit on recorded trees: ulimit_low (ulimit
// -f 8192) and overcommit_heuristic (no file size limit), with the real logs of
// tests/logs: torch.save to a path prints the words of a full disk under ulimit
// -f, and only the host's RLIMIT_FSIZE tells the two apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/explain/host.h"
#include "core/fixture_context.h"
#include "core/signatures/analyze.h"

namespace headroom {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kTorchSavePath = std::filesystem::path(HEADROOM_TEST_DATA) /
                                             "logs/disk_full/torch113_save_path_under_ulimit_f.log";
const std::filesystem::path kSigxfsz =
    std::filesystem::path(HEADROOM_TEST_DATA) / "logs/file_size_limit/bash_head_sigxfsz.log";

Diagnosis explained(const std::filesystem::path& log, std::string_view scenario,
                    HostConfirmation& host) {
  Diagnosis diagnosis = testing::analyze_files({log});
  testing::FakeSyscalls syscalls;
  host = confirm_on_host(testing::fixture_context(scenario, syscalls), diagnosis);
  apply_host(diagnosis, host);
  return diagnosis;
}

TEST(ExplainFileSizeLimit, TorchSaveUnderAFileSizeLimitIsTheLimitNotAFullDisk) {
  HostConfirmation host;
  const Diagnosis diagnosis = explained(kTorchSavePath, "ulimit_low", host);
  ASSERT_NE(diagnosis.verdict(), nullptr);
  EXPECT_EQ(diagnosis.verdict()->cause, "file_size_limit");
  EXPECT_THAT(diagnosis.verdict()->reasoning.back(),
              HasSubstr("file size limit 8.0 MiB (ulimit -f 8192)"));
  EXPECT_THAT(diagnosis.verdict()->reasoning.back(),
              HasSubstr("no filesystem the log names is full now"));
  const std::vector<std::string> fix = remedies_for(diagnosis, host);
  ASSERT_FALSE(fix.empty());
  EXPECT_THAT(fix.front(), HasSubstr("ulimit -f unlimited"));
}

TEST(ExplainFileSizeLimit, TorchSaveWithoutALimitStaysAFullDisk) {
  HostConfirmation host;
  const Diagnosis diagnosis = explained(kTorchSavePath, "overcommit_heuristic", host);
  EXPECT_EQ(diagnosis.verdict()->cause, "disk_full");
  EXPECT_EQ(diagnosis.candidates.size(), 1U);
}

TEST(ExplainFileSizeLimit, SigxfszIsConfirmedByTheLimitAndItsFixIsListedOnce) {
  HostConfirmation host;
  const Diagnosis diagnosis = explained(kSigxfsz, "ulimit_low", host);
  EXPECT_EQ(diagnosis.verdict()->cause, "file_size_limit");
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kHigh);
  EXPECT_THAT(diagnosis.verdict()->reasoning.back(), HasSubstr("confirmed on this host"));
  const std::vector<std::string> fix = remedies_for(diagnosis, host);
  EXPECT_EQ(std::count_if(fix.begin(), fix.end(),
                          [](const std::string& line) {
                            return line.find("ulimit -f unlimited") != std::string::npos;
                          }),
            1);
}

}  // namespace
}  // namespace headroom
