// read_active_series on a real directory: the series a job saves into, for the
// capacity rule of check and watch.
#include "core/series/series_space.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace headroom
