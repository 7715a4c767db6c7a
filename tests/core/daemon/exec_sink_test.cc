// The exec sink runs a real /bin/sh: the command must not inherit watch's
// blocked signals, and a timeout must kill what the shell started, not only
// the shell.

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/scratch_root.h"
#include "core/sys_root.h"
#include "daemon/sink_factories.h"

namespace headroom::daemon {
namespace {

/// A file's text ("" when missing).
std::string read_file(const std::filesystem::path& path) {
  return SysRoot("/").read(path).value_or("");
}

AlertEvent event() {
  AlertEvent event;
  event.rule = "filesystem_usage";
  event.subject = "/ckpt";
  return event;
}

/// True once `pid` is gone or a zombie (its new parent reaps it later).
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  return line.substr(line.rfind(')') + 2, 1) == "Z";
}

TEST(ExecSink, CommandRunsWithNoSignalBlocked) {
  const testing::ScratchRoot scratch;  // not the host's /tmp
  const auto out = scratch.path() / "sigblk";
  sigset_t blocked;
  sigset_t previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);  // as watch's threads have it
  // exec: grep reads its own mask, inherited through the shell (dash blocks
  // every signal in itself around vfork, so /proc/$$ could show that instead).
  auto sink =
      make_exec_sink("exec grep SigBlk /proc/self/status >" + out.string(), DeliveryOptions{});
  ASSERT_TRUE(sink);
  const std::atomic<bool> cancel{false};
  const auto sent = (*sink)->send(event(), cancel);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ASSERT_TRUE(sent) << sent.error().message;
  EXPECT_EQ(read_file(out), "SigBlk:\t0000000000000000\n");
}

TEST(ExecSink, TimeoutKillsWhatTheShellStarted) {
  const testing::ScratchRoot scratch;
  const auto out = scratch.path() / "child";
  DeliveryOptions delivery;
  delivery.timeout = std::chrono::milliseconds(300);
  auto sink = make_exec_sink("sleep 30 & echo $! >" + out.string() + "; wait", delivery);
  ASSERT_TRUE(sink);
  const std::atomic<bool> cancel{false};
  const auto started = std::chrono::steady_clock::now();
  const auto sent = (*sink)->send(event(), cancel);
  ASSERT_FALSE(sent);
  EXPECT_NE(sent.error().message.find("timed out"), std::string::npos) << sent.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  const pid_t child = std::stoi(read_file(out));
  for (int i = 0; i < 100 && !ended(child); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ended(child)) << "sleep " << child << " outlived the timeout";
  if (!ended(child)) ::kill(child, SIGKILL);  // started by this test
}

}  // namespace
}  // namespace headroom::daemon
