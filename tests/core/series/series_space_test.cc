// read_active_series on a real directory: the series a job saves into, for the
// capacity rule of check and watch.
#include "core/series/series_space.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "core/scratch_root.h"

namespace headroom {
namespace {

void write_bytes(const std::filesystem::path& path, std::size_t bytes) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
}

TEST(ReadActiveSeries, AFileWithoutAStepIsNeverTheJobsSeries) {
  testing::ScratchRoot scratch;
  const std::filesystem::path dir = scratch.path();
  // Another run's data beside the job's checkpoints, and written after them: still not a
  // series whose members retention removes (a save never deletes "old-run.bin").
  write_bytes(dir / "step_000100.pt", 4096);
  write_bytes(dir / "step_000200.pt", 4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_bytes(dir / "old-run.bin", 64 * 1024);
  const Context context;
  auto series = read_active_series(context, dir);
  ASSERT_TRUE(series) << series.error().message;
  EXPECT_EQ(series->name, "step_{N}.pt");
  ASSERT_EQ(series->members.size(), 2U);

  // Alone, it is no series at all: a fresh run.
  std::filesystem::remove(dir / "step_000100.pt");
  std::filesystem::remove(dir / "step_000200.pt");
  series = read_active_series(context, dir);
  ASSERT_TRUE(series);
  EXPECT_TRUE(series->name.empty());
  EXPECT_TRUE(series->members.empty());
}

/// The head of a torch.save zip without its end record: a save cut short, or still going.
void write_zip_head(const std::filesystem::path& path, std::size_t bytes) {
  std::ofstream(path, std::ios::binary) << "PK\x03\x04" << std::string(bytes - 4, 'x');
}

TEST(ReadActiveSeries, ASaveStillBeingWrittenIsTheNextSaveNotAMember) {
  testing::ScratchRoot scratch;
  const std::filesystem::path dir = scratch.path();
  write_bytes(dir / "step_000100.pt", 4096);
  write_bytes(dir / "step_000200.pt", 4096);
  const RealSyscalls syscalls;  // the kernel's write lease says who has a file open
  Context context;
  context.syscalls = &syscalls;
  // headroom.save_checkpoint's temp, its writer (this process) alive and holding it open.
  const std::string temp =
      fmt::format(".step_000300.pt.headroom-tmp-{}-0123abcd", static_cast<int>(::getpid()));
  write_bytes(dir / temp, 3000);
  {
    std::ofstream held(dir / temp, std::ios::binary | std::ios::app);  // as the saver holds it
    auto series = read_active_series(context, dir);
    ASSERT_TRUE(series) << series.error().message;
    EXPECT_EQ(series->saving_bytes, 4096U);  // disk bytes: one page
    EXPECT_EQ(series->members.size(), 2U);
    EXPECT_EQ(series->reclaimable_bytes, 0U);
  }
  std::filesystem::remove(dir / temp);
  // torch.save straight to the final name: cut short by its format and open, it is the save
  // in progress; closed, a member cut short (a dead save's leftovers are not room).
  write_zip_head(dir / "step_000300.pt", 8192);
  {
    std::ofstream held(dir / "step_000300.pt", std::ios::binary | std::ios::app);  // torch.save
    auto series = read_active_series(context, dir);
    ASSERT_TRUE(series);
    EXPECT_EQ(series->saving_bytes, 8192U);
    EXPECT_EQ(series->members.size(), 2U);
  }
  auto series = read_active_series(context, dir);
  ASSERT_TRUE(series);
  EXPECT_EQ(series->saving_bytes, 0U);
  ASSERT_EQ(series->members.size(), 3U);
  EXPECT_FALSE(series->members.front().complete);
}

TEST(ReadActiveSeries, ADeadSavesBytesAreNoSaveInProgressWhoeverHoldsThem) {
  // A save killed mid-write leaves its temp. In a container the restarted job often gets the
  // same pid (here: this process's), and a backup, an uploader or `tail -f` may hold a dead
  // save's file open for reading. Neither is a save in progress: the next save writes a new
  // temp or name, these bytes stay. Counted as its room, check said the next save fits while
  // save_checkpoint raised DiskFullError at once.
  testing::ScratchRoot scratch;
  const std::filesystem::path dir = scratch.path();
  write_bytes(dir / "step_000100.pt", 4096);
  write_bytes(dir / "step_000200.pt", 4096);
  const RealSyscalls syscalls;
  Context context;
  context.syscalls = &syscalls;
  const std::string temp =
      fmt::format(".step_000300.pt.headroom-tmp-{}-0123abcd", static_cast<int>(::getpid()));
  write_bytes(dir / temp, 3000);
  {
    auto series = read_active_series(context, dir);  // its pid lives, no one has it open
    ASSERT_TRUE(series) << series.error().message;
    EXPECT_EQ(series->saving_bytes, 0U);
    EXPECT_EQ(series->members.size(), 2U);
  }
  {
    std::ifstream reader(dir / temp);  // a backup reading it
    auto series = read_active_series(context, dir);
    ASSERT_TRUE(series);
    EXPECT_EQ(series->saving_bytes, 0U);
  }
  std::filesystem::remove(dir / temp);
  write_zip_head(dir / "step_000300.pt", 8192);  // a bare torch.save killed half way
  std::ifstream reader(dir / "step_000300.pt");  // `tail -f`, an uploader
  auto series = read_active_series(context, dir);
  ASSERT_TRUE(series);
  EXPECT_EQ(series->saving_bytes, 0U);
  ASSERT_EQ(series->members.size(), 3U);
  EXPECT_FALSE(series->members.front().complete);
}

}  // namespace
}  // namespace headroom
