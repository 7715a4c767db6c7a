#include "core/signatures/prefilter.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace headroom {

LiteralPrefilter::LiteralPrefilter(std::vector<std::string> literals)
    : literals_(std::move(literals)),
      bits_(std::size_t{1} << 10, 0),
      bucket_start_((1U << 16) + 1, 0) {
  stride_ = kMaxStride;
  for (const std::string& literal : literals_) {
    stride_ = std::min(stride_, literal.size() - kWindow + 1);
  }
  // Counting sort of (hash, window, literal, offset) into buckets indexed by hash.
  struct Item {
    std::uint32_t hash;
    Entry entry;
  };
  std::vector<Item> all;
  for (std::size_t l = 0; l < literals_.size(); ++l) {
    const std::string& literal = literals_[l];
    for (std::size_t offset = 0; offset + kWindow <= literal.size(); ++offset) {
      const std::uint32_t h = hash(literal.data() + offset);
      std::uint32_t window = 0;
      std::memcpy(&window, literal.data() + offset, sizeof window);
      all.push_back(
          {h, {window, static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(offset)}});
      bits_[h >> 6] |= std::uint64_t{1} << (h & 63);
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Item& a, const Item& b) { return a.hash < b.hash; });
  for (const Item& item : all) ++bucket_start_[item.hash + 1];
  for (std::size_t h = 1; h < bucket_start_.size(); ++h) bucket_start_[h] += bucket_start_[h - 1];
  entries_.reserve(all.size());
  for (const Item& item : all) entries_.push_back(item.entry);
}

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HEADROOM_COUNT_AVX2 1
/// The AVX2 form of count_newlines' loop: 32 bytes a step. Returns where it stopped.
__attribute__((target("avx2"))) const char* count_newlines_avx2(const char* begin, const char* end,
                                                                std::size_t& count) {
  const __m256i newline = _mm256_set1_epi8('\n');
  while (end - begin >= 32) {
    __m256i lanes = _mm256_setzero_si256();
    for (int round = 0; round < 255 && end - begin >= 32; ++round, begin += 32) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(begin));
      lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(bytes, newline));
    }
    const __m256i sums = _mm256_sad_epu8(lanes, _mm256_setzero_si256());
    count += static_cast<std::size_t>(_mm256_extract_epi64(sums, 0)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 1)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 2)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 3));
  }
  return begin;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

std::size_t LiteralPrefilter::count_newlines(const char* begin, const char* end) {
  std::size_t count = 0;
#if defined(HEADROOM_COUNT_AVX2)
  if (kHaveAvx2 && end - begin >= 64) begin = count_newlines_avx2(begin, end, count);
#endif
#if defined(__SSE2__)
  // Per-byte counters (a match is -1, so subtracting adds 1) summed every 255
  // rounds with psadbw: no popcount instruction needed on baseline x86-64.
  const __m128i newline = _mm_set1_epi8('\n');
  while (end - begin >= 16) {
    __m128i lanes = _mm_setzero_si128();
    for (int round = 0; round < 255 && end - begin >= 16; ++round, begin += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(begin));
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(bytes, newline));
    }
    const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
    count += static_cast<std::size_t>(_mm_cvtsi128_si32(sums)) +
             static_cast<std::size_t>(_mm_cvtsi128_si32(_mm_srli_si128(sums, 8)));
  }
#endif
  for (; begin < end; ++begin) count += *begin == '\n' ? 1U : 0U;
  return count;
}

}  // namespace headroom
