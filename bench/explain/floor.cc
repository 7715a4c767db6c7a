// The matcher alone: how fast Hyperscan finds explain's literals in a log on one core,
// with nothing else of explain around it (no reading: the file is mapped and faulted in
// before the clock starts; no line counting, no RE2). explain's scan cannot go faster than
// this on a core, so its ceiling on N cores is N times the rate printed here.
//
//   headroom explain --dump-literals > literals.txt
//   c++ -O2 -std=c++20 bench/explain/floor.cc -lhs -o floor
//   ./floor literals.txt train.log [MIN_LENGTH]
//
// Prints: literals, CPU seconds of the scan (this thread's clock), GB/s on one core, hits.
// MIN_LENGTH keeps only the literals at least that long (what shorter literals cost).
// The same database and pieces as explain: hs_compile_lit_multi, block mode, 256 KiB.
#include <fcntl.h>
#include <hs/hs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

int count_hit(unsigned, unsigned long long, unsigned long long, unsigned, void* hits) {
  ++*static_cast<std::size_t*>(hits);
  return 0;
}

std::string unescape(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) {
      out.push_back(line[i + 1] == 'n' ? '\n' : line[i + 1]);
      ++i;
    } else {
      out.push_back(line[i]);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: floor LITERALS LOG [MIN_LENGTH]\n");
    return 2;
  }
  const std::size_t min_length = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 0;
  std::ifstream in(argv[1]);
  std::vector<std::string> literals;
  for (std::string line; std::getline(in, line);) {
    std::string literal = unescape(line);
    if (!literal.empty() && literal.size() >= min_length) literals.push_back(std::move(literal));
  }
  std::vector<const char*> expressions;
  std::vector<std::size_t> lengths;
  std::vector<unsigned> flags(literals.size(), 0);
  std::vector<unsigned> ids;
  for (std::size_t i = 0; i < literals.size(); ++i) {
    expressions.push_back(literals[i].data());
    lengths.push_back(literals[i].size());
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t* database = nullptr;
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions.data(), flags.data(), ids.data(), lengths.data(),
                           static_cast<unsigned>(literals.size()), HS_MODE_BLOCK, nullptr,
                           &database, &error) != HS_SUCCESS) {
    std::fprintf(stderr, "floor: %s\n", error->message);
    return 1;
  }
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(database, &scratch) != HS_SUCCESS) return 1;
  const int fd = open(argv[2], O_RDONLY);
  struct stat info {};
  if (fd < 0 || fstat(fd, &info) != 0 || info.st_size == 0) {
    std::perror(argv[2]);
    return 1;
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  const auto* data =
      static_cast<const char*>(mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0));
  if (data == MAP_FAILED) return 1;
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  std::size_t hits = 0;
  const double start = thread_seconds();
  for (std::size_t at = 0; at < size; at += kPiece) {
    hs_scan(database, data + at, static_cast<unsigned>(std::min(kPiece, size - at)), 0, scratch,
            count_hit, &hits);
  }
  const double seconds = thread_seconds() - start;
  std::printf("%zu %.3f %.2f %zu\n", literals.size(), seconds,
              static_cast<double>(size) / seconds / 1e9, hits);
  return 0;
}
