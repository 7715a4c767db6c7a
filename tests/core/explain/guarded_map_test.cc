// GuardedMap (explain's mapped reading): a page the file lost while mapped reads as zeros
// and is reported, instead of SIGBUS killing the process; a SIGBUS that is not about a
// guarded map still reaches whatever handled it before, or kills as before.

#include "core/explain/guarded_map.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::ScratchRoot;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

/// A file of `pages` pages of 'a', open for reading and writing.
int page_file(const ScratchRoot& dir, const char* name, std::size_t pages) {
  const std::string path = (dir.path() / name).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const std::string bytes(pages * kPage, 'a');
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

/// Reads through a volatile pointer, so that the access happens where written.
char touch(const char* at) { return *static_cast<const volatile char*>(at); }

TEST(GuardedMap, APageCutWhileMappedReadsAsZerosAndIsReported) {
  const ScratchRoot dir;
  const int fd = page_file(dir, "log", 3);
  auto map = GuardedMap::map(fd, 0, 3 * kPage, "log");
  ASSERT_TRUE(map.has_value()) << map.error().message;
  EXPECT_EQ(touch(map->bytes().data()), 'a');
  EXPECT_FALSE(map->lost_pages());
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kPage)), 0);  // copytruncate, in short
  EXPECT_EQ(touch(map->bytes().data() + 2 * kPage + 7), '\0');
  EXPECT_TRUE(map->lost_pages());
  EXPECT_EQ(touch(map->bytes().data() + 5), 'a');  // what the file still holds is intact
  ::close(fd);
}

TEST(GuardedMap, AnOffsetInsideAPageMapsFromThere) {
  const ScratchRoot dir;
  const int fd = page_file(dir, "log", 2);
  ASSERT_EQ(::pwrite(fd, "xyz", 3, static_cast<off_t>(kPage + 100)), 3);
  auto map = GuardedMap::map(fd, kPage + 100, 3, "log");
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->bytes(), "xyz");
  ::close(fd);
}

TEST(GuardedMap, TheHandlerThatWasThereIsBackWhenNoMapIsLeft) {
  const ScratchRoot dir;
  const int fd = page_file(dir, "log", 1);
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &before), 0);
  {
    auto first = GuardedMap::map(fd, 0, kPage, "log");
    auto second = GuardedMap::map(fd, 0, kPage, "log");
    ASSERT_TRUE(first.has_value() && second.has_value());
    struct sigaction during {};
    ASSERT_EQ(::sigaction(SIGBUS, nullptr, &during), 0);
    EXPECT_NE(during.sa_sigaction, before.sa_sigaction);
  }
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &after), 0);
  // The same disposition (glibc adds its SA_RESTORER flag to whatever it installs).
  EXPECT_EQ(after.sa_sigaction, before.sa_sigaction);
  EXPECT_EQ(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
  ::close(fd);
}

volatile sig_atomic_t theirs_called = 0;
void theirs(int, siginfo_t* info, void*) {
  theirs_called = 1;
  // Lets the faulting read go on, as a real handler (a JIT, a database) would.
  const auto page = reinterpret_cast<std::uintptr_t>(info->si_addr) & ~(kPage - 1);
  ::mmap(reinterpret_cast<void*>(page), kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
         -1, 0);
}

/// Runs `body` in a child without core dumps and without stderr (ASan reports the SIGBUS
/// the child is meant to die of as an ERROR, which reads like a failure in the test log);
/// returns how the child ended (waitpid's status).
template <typename Body>
int in_child(Body body) {
  const pid_t child = ::fork();
  if (child == 0) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    body();
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

/// That the child died of SIGBUS rather than exit with `survived` (under ASan, which reports
/// a SIGBUS itself and exits: only that it did not go on).
void expect_died_of_sigbus(int status, int survived) {
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == survived) << status;
#else
  (void)survived;
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
#endif
}

/// In a child: a SIGBUS on a mapping that is not guarded, while a guarded one is alive.
/// Returns how the child ended (waitpid's status).
template <typename Setup>
int fault_outside_a_guard(Setup setup) {
  const ScratchRoot dir;
  return in_child([&] {
    setup();
    const int guarded_fd = page_file(dir, "guarded", 1);
    const int other_fd = page_file(dir, "other", 2);
    auto guarded = GuardedMap::map(guarded_fd, 0, kPage, "guarded");
    auto* other =
        static_cast<const char*>(::mmap(nullptr, 2 * kPage, PROT_READ, MAP_SHARED, other_fd, 0));
    if (!guarded || other == MAP_FAILED || ::ftruncate(other_fd, 0) != 0) ::_exit(3);
    (void)touch(other + kPage);
    ::_exit(theirs_called == 1 ? 0 : 4);
  });
}

TEST(GuardedMap, AFaultElsewhereGoesToTheHandlerThatWasThere) {
  const int status = fault_outside_a_guard([] {
    struct sigaction handler {};
    handler.sa_sigaction = theirs;
    handler.sa_flags = SA_SIGINFO;
    ::sigemptyset(&handler.sa_mask);
    ::sigaction(SIGBUS, &handler, nullptr);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(GuardedMap, AFaultElsewhereStillKillsWhenNothingHandledIt) {
  // AddressSanitizer's own SIGBUS report ends the process: it must not go on.
  expect_died_of_sigbus(fault_outside_a_guard([] {}), 4);
}

/// `kill -BUS` is not a fault: it does what it did before, here end the process.
TEST(GuardedMap, ASentSigbusIsNotSwallowed) {
  const ScratchRoot dir;
  expect_died_of_sigbus(in_child([&] {
                          const int fd = page_file(dir, "guarded", 1);
                          auto guarded = GuardedMap::map(fd, 0, kPage, "guarded");
                          if (!guarded) ::_exit(3);
                          ::kill(::getpid(), SIGBUS);
                          ::_exit(0);  // still alive: the signal was swallowed
                        }),
                        0);
}

}  // namespace
}  // namespace headroom
