#include "core/walk/dirents.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/scratch_root.h"

namespace headroom::walk {
namespace {

// The walker stats each batch of a listing in inode order: every entry once,
// "." and ".." never, the inodes ascending within a batch, and every entry
// still visited when the buffer holds only a few records per batch.
TEST(Dirents, ByInodeVisitsEveryEntryOnceInInodeOrderWithinABatch) {
  testing::ScratchRoot scratch;
  std::map<std::string, ino_t> inodes;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "entry-" + std::to_string(i * 7919 % 300);
    std::ofstream(scratch.path() / name) << "x";
    struct stat raw {};
    ASSERT_EQ(::lstat((scratch.path() / name).c_str(), &raw), 0);
    inodes[name] = raw.st_ino;
  }
  for (const std::size_t size : {kDirentBufferSize, std::size_t{256}}) {
    const int fd = ::open(scratch.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto buffer = std::make_unique<char[]>(size);
    std::vector<DirentRef> order;
    std::set<std::string> seen;
    std::vector<ino_t> sequence;
    const int error = for_each_dirent_by_inode(
        fd, buffer.get(), size, order, [&](std::string_view name, unsigned char) {
          EXPECT_TRUE(seen.insert(std::string(name)).second) << name;
          sequence.push_back(inodes.at(std::string(name)));
        });
    ::close(fd);
    EXPECT_EQ(error, 0);
    EXPECT_EQ(seen.size(), inodes.size()) << size;
    if (size == kDirentBufferSize) {
      EXPECT_TRUE(std::is_sorted(sequence.begin(), sequence.end()));  // one batch
    }
  }
}

}  // namespace
}  // namespace headroom::walk
