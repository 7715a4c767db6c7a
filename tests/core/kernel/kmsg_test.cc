#include "core/kernel/kmsg.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

TEST(ParseKmsg, ReadsHeadersAndSkipsContinuations) {
  const auto records = parse_kmsg(
      "6,339,1180000,-;first message\n SUBSYSTEM=cpu\n DEVICE=+cpu:3\n"
      "12,340,1190000,c,more;second; with semicolon\nnot a record\n");
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(records[0].level, 6);
  EXPECT_EQ(records[0].sequence, 339U);
  EXPECT_EQ(records[0].since_boot, std::chrono::microseconds(1180000));
  EXPECT_EQ(records[1].facility, 1);
  EXPECT_EQ(records[1].level, 4);
  EXPECT_EQ(records[1].message, "second; with semicolon");
}

TEST(ParseOomEvents, MergesTheLinesOfOneMemcgKill) {
  const auto records = parse_kmsg(
      "6,2003,5000000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,"
      "mems_allowed=0-1,oom_memcg=/docker/abc,task_memcg=/docker/abc/"
      "sub,task=python3,pid=4242,uid=0\n"
      "3,2004,5000100,-;Memory cgroup out of memory: Killed process 4242 (python3) "
      "total-vm:123456kB, "
      "anon-rss:65432kB, file-rss:1024kB, shmem-rss:512kB, UID:0 pgtables:300kB oom_score_adj:0\n"
      "6,2005,5000200,-;oom_reaper: reaped process 4242 (python3), now anon-rss:0kB\n");
  const auto boot = std::chrono::system_clock::time_point(seconds(1'700'000'000));
  const auto events = parse_oom_events(records, boot);
  ASSERT_EQ(events.size(), 1U);
  const OomEvent& event = events[0];
  EXPECT_EQ(event.pid, 4242);
  EXPECT_EQ(event.comm, "python3");
  EXPECT_EQ(event.constraint, OomConstraint::kMemoryCgroup);
  EXPECT_EQ(event.oom_cgroup, "/docker/abc");
  EXPECT_EQ(event.task_cgroup, "/docker/abc/sub");
  EXPECT_EQ(event.uid, 0);
  EXPECT_EQ(event.anon_rss_bytes, 65432U * 1024);
  EXPECT_EQ(event.rss_bytes(), (65432U + 1024 + 512) * 1024);
  EXPECT_EQ(event.total_vm_bytes, 123456U * 1024);
  EXPECT_TRUE(event.reaped);
  ASSERT_TRUE(event.time);
  EXPECT_EQ(*event.time, boot + seconds(5));
  // The sequence number orders it exactly against a mark taken before a job started.
  EXPECT_EQ(event.sequence, 2003U);
  EXPECT_EQ(next_sequence(KernelLog{records, boot}), 2006U);
  EXPECT_EQ(next_sequence(KernelLog{}), 0U);
}

TEST(ParseOomEvents, HostWideAndOldKernelForms) {
  const auto records = parse_kmsg(
      // Linux < 4.19: no oom-kill: line; "Kill process" then "Killed process".
      "3,10,1000,-;Out of memory: Kill process 77 (trainer) score 900 or sacrifice child\n"
      "3,11,1001,-;Killed process 77 (trainer) total-vm:2048kB, anon-rss:1024kB, file-rss:0kB\n"
      "6,12,2000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
      "global_oom,task_memcg=/user.slice,task=pt_data_worker,pid=88,uid=1000\n"
      "3,13,2001,-;Out of memory: Killed process 88 (pt_data_worker) total-vm:4096kB, "
      "anon-rss:2048kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:12kB oom_score_adj:0\n");
  const auto events = parse_oom_events(records);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].pid, 77);
  EXPECT_EQ(events[0].comm, "trainer");
  EXPECT_EQ(events[0].constraint, OomConstraint::kHost);
  EXPECT_FALSE(events[0].time);
  EXPECT_EQ(events[1].comm, "pt_data_worker");
  EXPECT_EQ(events[1].constraint, OomConstraint::kHost);
  EXPECT_EQ(events[1].task_cgroup, "/user.slice");
  EXPECT_TRUE(events[1].oom_cgroup.empty());
  EXPECT_EQ(events[1].uid, 1000);
}

TEST(ReadKmsg, ReadsAFixtureFileToEof) {
  testing::FakeSyscalls syscalls;
  const Context context = testing::fixture_context("cgroup_v2", syscalls);
  auto log = read_kmsg(context);
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_TRUE(log->boot_time);
  // /proc/uptime says 100000 s, so boot was that long before the fake clock.
  EXPECT_EQ(*log->boot_time, syscalls.now_ - seconds(100000));
  const auto events = parse_oom_events(log->records, log->boot_time);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[1].comm, "pt_main_thread");
  EXPECT_EQ(events[1].pid, 48211);
  EXPECT_LT(syscalls.now_ - *events[1].time, hours(3));
  EXPECT_GT(syscalls.now_ - *events[0].time, hours(24));
}

TEST(ReadKmsg, MissingDeviceIsNotFound) {
  testing::FakeSyscalls syscalls;
  auto log = read_kmsg(testing::fixture_context("docker_64m_shm", syscalls));
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, Error::Code::kNotFound);
  EXPECT_NE(log.error().message.find("/dev/kmsg"), std::string::npos) << log.error().message;
}

}  // namespace
}  // namespace headroom
