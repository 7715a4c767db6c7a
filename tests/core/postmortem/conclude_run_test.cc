// conclude_run: the end of `headroom run` as one core call, over a recorded host.
// What sampling could not read is kept as typed failures: a pid that exited between
// listing and reading (ENOENT) is no blind spot, a refused one (EACCES) is.

#include "core/postmortem/conclude_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "core/fixture_context.h"
#include "core/signatures/catalog.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

bool mentions(const std::vector<std::string>& lines, std::string_view text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

TEST(ConcludeRun, OnlyRefusedReadsAreBlindSpots) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("bare_host", syscalls);
  SupervisionResult run;
  run.main_pid = 4242;
  run.wait_status = SIGKILL;  // killed, nothing in its output explains it
  run.exit_code = 128 + SIGKILL;
  run.exits.push_back({run.main_pid, run.wait_status, {}});
  run.unreadable.push_back(
      {"pid 4300 fds", Error{Error::Code::kPermissionDenied, "/proc/4300/fd: Permission denied"}});
  run.unreadable.push_back(
      {"pid 4301 fds", Error{Error::Code::kNotFound, "/proc/4301/fd: No such file or directory"}});
  auto catalog = load_catalog({});
  ASSERT_TRUE(catalog) << catalog.error().message;
  const Postmortem postmortem =
      conclude_run(context, run, CheckOptions{}, mark_job_start(context), *catalog);
  EXPECT_TRUE(postmortem.needed);
  EXPECT_TRUE(mentions(postmortem.could_not_see, "/proc/4300/fd: Permission denied"));
  EXPECT_FALSE(mentions(postmortem.could_not_see, "/proc/4301/fd"));
}

TEST(ConcludeRun, AJobThatExitedZeroNeedsNoPostmortem) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("bare_host", syscalls);
  SupervisionResult run;
  run.main_pid = 4242;
  run.exits.push_back({run.main_pid, 0, {}});
  run.output_tail = "Traceback (most recent call last):\nOSError: [Errno 28] No space left\n";
  auto catalog = load_catalog({});
  ASSERT_TRUE(catalog) << catalog.error().message;
  const Postmortem postmortem =
      conclude_run(context, run, CheckOptions{}, mark_job_start(context), *catalog);
  EXPECT_FALSE(postmortem.needed) << postmortem.summary;
}

TEST(ConcludeRun, ExplainReadsTheKeptTailFromItsFirstWholeLine) {
  SupervisionResult run;
  run.output_tail = "ial line\nwhole line\n";
  run.output_bytes = 1000;  // older output was dropped
  EXPECT_EQ(output_for_explain(run), "whole line\n");
  run.output_bytes = run.output_tail.size();
  EXPECT_EQ(output_for_explain(run), run.output_tail);
}

}  // namespace
}  // namespace headroom
