// tmp.space, tmp.socket and tmp.exec on writable copies of recorded trees: the probes
// really create, write, bind and remove files there, as on a live host.
#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/scratch_root.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fs_stats;
using testing::ScratchRoot;

struct TmpRun {
  explicit TmpRun(std::string_view scenario) : root(scenario) {
    context = root.context(syscalls);
    context.working_directory = "/srv/job";  // absent in the trees: not a usable fallback
  }
  std::vector<Finding> run(RuntimeKind kind = RuntimeKind::kHost) {
    Runtime runtime;
    runtime.kind = kind;
    return check_tmp(CheckInput{context, options, runtime});
  }
  FakeSyscalls& fs(const std::string& dir, FsStats stats) {
    return syscalls.set_fs(root.path() / dir.substr(1), stats);
  }
  ScratchRoot root;
  FakeSyscalls syscalls;
  Context context;
  CheckOptions options;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(CheckTmp, FullTmpFallsBackToVarTmpWithAWarning) {
  TmpRun job("tmp_full_fallback");
  job.fs("/tmp", fs_stats(8 * kMiB, 0));
  job.fs("/var/tmp", fs_stats(64 * kMiB, 64 * kMiB));
  const auto findings = job.run();
  ASSERT_EQ(findings.size(), 3U);
  const Finding& space = findings[0];
  EXPECT_EQ(space.id, "tmp.space");
  EXPECT_EQ(space.severity, Severity::kWarn) << space.summary;
  EXPECT_EQ(space.subject, "/var/tmp");
  EXPECT_NE(space.summary.find("/tmp is not usable"), std::string::npos) << space.summary;
  EXPECT_NE(space.summary.find("silently falls back to /var/tmp (64.0 MiB free"), std::string::npos)
      << space.summary;
  EXPECT_NE(evidence_text(space, "skipped_candidates").find("(0 B free of 8.0 MiB"),
            std::string::npos)
      << evidence_text(space, "skipped_candidates");
  EXPECT_EQ(evidence_text(space, "mount_point"), "/var/tmp");
  EXPECT_EQ(evidence_text(space, "fstype"), "tmpfs");
  EXPECT_NE(joined(space.remedy).find("export TMPDIR=/var/tmp"), std::string::npos);
  job.options.dirs = {"/var/tmp"};
  EXPECT_NE(
      joined(job.run()[0].remedy).find("mkdir -p /var/tmp/.tmp && export TMPDIR=/var/tmp/.tmp"),
      std::string::npos);
  const Finding& socket = findings[1];
  EXPECT_EQ(socket.id, "tmp.socket");
  EXPECT_EQ(socket.severity, Severity::kOk) << socket.summary;
  EXPECT_EQ(evidence_text(socket, "socket_path_length"), "40 B");
  EXPECT_EQ(job.root.entries("/var/tmp"), 1U);  // the probes left nothing behind
}

TEST(CheckTmp, NoUsableCandidateIsCriticalWithPythonsError) {
  TmpRun job("tmp_nofallback");
  job.context.working_directory = "/srv";
  const auto findings = job.run();
  for (const Finding& finding : findings) {
    EXPECT_EQ(finding.severity, Severity::kCritical) << finding.id << ": " << finding.summary;
    EXPECT_NE(
        finding.summary.find(
            "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '/srv']"),
        std::string::npos)
        << finding.summary;
  }
  EXPECT_EQ(evidence_text(findings[0], "candidates_tried"), "4");
  // /srv is not there to hold a .tmp: the remedy does not suggest it.
  EXPECT_NE(joined(findings[0].remedy).find("export TMPDIR=/path/with/space"), std::string::npos)
      << joined(findings[0].remedy);
}

TEST(CheckTmp, UnusableTmpdirIsSkippedLikePythonDoes) {
  TmpRun job("tmp_full_fallback");
  job.context.environment = {{"TMPDIR", "/scratch/gone"}};
  const Finding space = job.run().front();
  EXPECT_EQ(space.severity, Severity::kWarn);
  EXPECT_EQ(space.subject, "/var/tmp");
  EXPECT_NE(space.summary.find("TMPDIR=/scratch/gone is not usable (No such file or directory"),
            std::string::npos)
      << space.summary;
  EXPECT_NE(space.summary.find("tempfile skips it and uses /var/tmp"), std::string::npos);
}

TEST(CheckTmp, HealthyTmpIsOk) {
  TmpRun job("tmp_full_fallback");
  std::filesystem::create_directory(job.root.path() / "tmp");
  job.fs("/tmp", fs_stats(8 * kGiB, 7 * kGiB));
  const auto findings = job.run();
  EXPECT_EQ(findings[0].severity, Severity::kOk) << findings[0].summary;
  EXPECT_EQ(findings[0].subject, "/tmp");
  EXPECT_EQ(evidence_text(findings[0], "temp_dir_origin"), "default");
  EXPECT_EQ(findings[1].severity, Severity::kOk) << findings[1].summary;
  EXPECT_TRUE(findings[0].remedy.empty());
}

TEST(CheckTmp, NearlyFullTempDirWarns) {
  TmpRun job("tmp_full_fallback");
  std::filesystem::create_directory(job.root.path() / "tmp");
  job.fs("/tmp", fs_stats(8 * kGiB, kGiB / 4));
  const Finding space = job.run().front();
  EXPECT_EQ(space.severity, Severity::kWarn);
  EXPECT_NE(space.summary.find("nearly full"), std::string::npos) << space.summary;
  EXPECT_NE(joined(space.remedy).find("headroom"), std::string::npos);
}

TEST(CheckTmp, TooLongTempDirBreaksTheSocket) {
  TmpRun job("tmp_full_fallback");
  const std::string long_dir = "/" + std::string(90, 'x');  // 91 + 32 bytes
  std::filesystem::create_directory(job.root.path() / long_dir.substr(1));
  job.context.environment = {{"TMPDIR", long_dir}};
  const auto findings = job.run();
  EXPECT_EQ(findings[0].severity, Severity::kOk) << findings[0].summary;
  EXPECT_EQ(findings[1].severity, Severity::kCritical);
  EXPECT_NE(findings[1].summary.find("AF_UNIX path too long"), std::string::npos);
  EXPECT_NE(findings[1].summary.find("123 bytes, the limit is 107"), std::string::npos)
      << findings[1].summary;
}

TEST(CheckTmp, RemediesSpeakTheRuntimesDialect) {
  TmpRun docker("tmp_full_fallback");
  EXPECT_NE(joined(docker.run(RuntimeKind::kDocker)[0].remedy).find("docker run --tmpfs /tmp"),
            std::string::npos);
  TmpRun pod("tmp_full_fallback");
  EXPECT_NE(joined(pod.run(RuntimeKind::kKubernetes)[0].remedy).find("mountPath: /tmp"),
            std::string::npos);
}

/// The tmp.exec finding of a run.
Finding exec_finding(TmpRun& job, RuntimeKind kind = RuntimeKind::kHost) {
  for (Finding& finding : job.run(kind)) {
    if (finding.id == "tmp.exec") return finding;
  }
  ADD_FAILURE() << "no tmp.exec finding";
  return {};
}

/// tmp.exec on the tmp_noexec tree, recorded in a mount namespace with /tmp a
/// tmpfs mounted noexec (as CIS hardening and Docker's --tmpfs do).
Finding noexec_tmp(std::map<std::string, std::string> environment,
                   RuntimeKind kind = RuntimeKind::kHost) {
  TmpRun job("tmp_noexec");
  job.fs("/tmp", fs_stats(64 * kMiB, 64 * kMiB));
  job.context.environment = std::move(environment);
  return exec_finding(job, kind);
}

TEST(CheckTmpExec, NoexecTmpWarnsThatCompiledKernelsCannotLoad) {
  const Finding exec = noexec_tmp({{"USER", "alice"}, {"HOME", "/home/alice"}});
  EXPECT_EQ(exec.severity, Severity::kWarn) << exec.summary;
  EXPECT_EQ(exec.subject, "/tmp/torchinductor_alice");
  EXPECT_EQ(exec.summary,
            "/tmp is mounted noexec: torch.compile (inductor) writes its compiled kernels to "
            "/tmp/torchinductor_alice and cannot load them (\"failed to map segment from shared "
            "object\")");
  EXPECT_EQ(evidence_text(exec, "inductor_cache_noexec"), "yes");
  EXPECT_EQ(evidence_text(exec, "inductor_cache_mount_point"), "/tmp");
  EXPECT_EQ(evidence_text(exec, "triton_cache_dir"), "/home/alice/.triton/cache");
  EXPECT_EQ(evidence_text(exec, "triton_cache_noexec"), "no");
  // Only the refused dir moves, to the job's own dir on an exec mount.
  EXPECT_EQ(exec.remedy.front(),
            "keep compiled kernels on a mount that allows exec, before the job starts: export "
            "TORCHINDUCTOR_CACHE_DIR=/srv/job/.cache/torchinductor");
  EXPECT_NE(joined(exec.remedy).find("sudo mount -o remount,exec /tmp"), std::string::npos);
  EXPECT_NE(joined(noexec_tmp({{"USER", "alice"}}, RuntimeKind::kDocker).remedy)
                .find("docker run --tmpfs /tmp:rw,exec,size=1g"),
            std::string::npos);
}

TEST(CheckTmpExec, ACacheDirOnAnExecMountIsFine) {
  const Finding exec =
      noexec_tmp({{"USER", "alice"}, {"TORCHINDUCTOR_CACHE_DIR", "/srv/cache/inductor"}});
  EXPECT_EQ(exec.severity, Severity::kOk) << exec.summary;
  EXPECT_EQ(evidence_text(exec, "inductor_cache_origin"), "TORCHINDUCTOR_CACHE_DIR");
  EXPECT_EQ(exec.summary,
            "compiled kernels can be loaded: /srv/cache/inductor is on mounts that allow exec");
}

TEST(CheckTmpExec, TritonsOwnCacheOnANoexecTmpIsNamedToo) {
  const Finding exec = noexec_tmp({{"LOGNAME", "bob"}, {"TRITON_CACHE_DIR", "/tmp/triton"}});
  EXPECT_EQ(exec.severity, Severity::kWarn);
  EXPECT_NE(exec.summary.find("/tmp/torchinductor_bob"), std::string::npos) << exec.summary;
  EXPECT_NE(exec.summary.find("; Triton too, in /tmp/triton on /tmp"), std::string::npos)
      << exec.summary;
  EXPECT_NE(exec.remedy.front().find(
                "export TORCHINDUCTOR_CACHE_DIR=/srv/job/.cache/torchinductor && export "
                "TRITON_CACHE_DIR=/srv/job/.cache/triton"),
            std::string::npos)
      << exec.remedy.front();
}

TEST(CheckTmpExec, AnExecTmpIsOk) {
  TmpRun job("tmp_full_fallback");
  job.fs("/var/tmp", fs_stats(64 * kMiB, 64 * kMiB));
  job.context.environment = {{"USER", "carol"}};
  const Finding exec = exec_finding(job);
  EXPECT_EQ(exec.severity, Severity::kOk) << exec.summary;
  EXPECT_EQ(evidence_text(exec, "inductor_cache_dir"), "/var/tmp/torchinductor_carol");
  EXPECT_EQ(evidence_text(exec, "inductor_cache_noexec"), "no");
}

}  // namespace
}  // namespace headroom
