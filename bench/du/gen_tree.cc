// Generates the benchmark tree for bench/du/run: N files (a multiple of 1000)
// in leaf directories of 1000 files each, laid out top/sub/leaf (10 x 10 x 10
// leaves per top dir), sizes 0..12 KiB from a fixed seed, plus one hard link
// and one symlink per leaf directory. Two threads, raw open/write/close:
// 1,000,000 files take about a minute instead of the ~20 of a shell loop.
//
// Usage: gen_tree ROOT FILES

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kFilesPerLeaf = 1000;

void make_leaf(const std::string& root, int leaf, const char* data) {
  const std::string dir = root + "/d" + std::to_string(leaf / 100) + "/s" +
                          std::to_string(leaf / 10 % 10) + "/t" + std::to_string(leaf % 10);
  std::string partial = root;
  for (const std::string& part :
       {"/d" + std::to_string(leaf / 100), "/s" + std::to_string(leaf / 10 % 10),
        "/t" + std::to_string(leaf % 10)}) {
    partial += part;
    ::mkdir(partial.c_str(), 0755);
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd < 0) {
    std::perror(dir.c_str());
    std::exit(1);
  }
  unsigned state = 2166136261u ^ static_cast<unsigned>(leaf);
  char name[64];
  for (int file = 0; file < kFilesPerLeaf; ++file) {
    state = state * 1664525u + 1013904223u;
    // One file in five is empty; the rest 1..12 KiB, like logs, configs and small shards.
    const std::size_t size = (state >> 8) % 5 == 0 ? 0 : 1 + (state >> 12) % (12 * 1024);
    std::snprintf(name, sizeof name, "file-%04d.dat", file);
    const int fd = ::openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (size > 0 && ::write(fd, data, size) != static_cast<ssize_t>(size))) {
      std::perror(name);
      std::exit(1);
    }
    ::close(fd);
  }
  ::linkat(dir_fd, "file-0001.dat", dir_fd, "hardlink.dat", 0);
  ::symlinkat("../../../d0", dir_fd, "symlink-to-d0");
  ::close(dir_fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ROOT FILES\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const long files = std::atol(argv[2]);
  const int leaves = static_cast<int>(files / kFilesPerLeaf);
  ::mkdir(root.c_str(), 0755);
  static char data[12 * 1024 + 1];
  for (std::size_t i = 0; i < sizeof data; ++i) data[i] = static_cast<char>('a' + i % 26);
  std::vector<std::thread> threads;
  for (int worker = 0; worker < 2; ++worker) {
    threads.emplace_back([&, worker] {
      for (int leaf = worker; leaf < leaves; leaf += 2) make_leaf(root, leaf, data);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return 0;
}
