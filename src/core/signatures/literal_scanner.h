#pragma once
// Finds every occurrence of the catalog's literals in a block: the first stage of
// explain's scan (RE2 runs only on the lines a literal was found in). Hyperscan (or
// Vectorscan, its port to other CPUs) matches all literals together with vectorized
// multi-literal search; where it is not built in, or the CPU lacks what it needs
// (hs_valid_platform), the sampled-window LiteralPrefilter does the same job, slower.
//
// The compiled literals are shared by copies (several analyzers of one catalog); each
// copy has its own scratch space, so copies may scan on different threads.
//
// Two stages (Hyperscan only, when the caller names `first` literals): scan_block looks for
// the `first` literals alone, which is faster than all of them, and then for all of them on
// the lines where it found one, on the block's last `tail_lines` lines, and on every line from
// `tail_lines` lines above the first `whole` literal it found. The lines it looked at get
// exactly the hits one scan of all the literals gives them; the others get none, so the
// caller must know that no hit there of a literal outside `first` can matter (analyzer.cc:
// location hints and markers only count near a located error).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/signatures/prefilter.h"

namespace headroom {

struct LiteralSet;

/// An occurrence of a literal in a block, and the number of '\n' bytes before it there
/// (its line's index in the block).
struct LiteralHit {
  std::size_t at = 0;
  std::size_t literal = 0;
  std::uint64_t newlines = 0;
  friend bool operator<(const LiteralHit& a, const LiteralHit& b) {
    return a.at != b.at ? a.at < b.at : a.literal < b.literal;
  }
};

/// What scan_block found in a block: every occurrence that lies wholly inside it, once,
/// in (position, literal) order, and the block's '\n' count. After a two-stage scan, maybe
/// only some lines have their hits (`complete` is false): those the first stage found a
/// literal on, and every line that starts at `tail` or after.
struct BlockScan {
  std::vector<LiteralHit> hits;
  std::uint64_t newlines = 0;
  bool complete = true;
  std::size_t tail = 0;
  std::vector<LiteralHit> first;  ///< the first stage's hits (kept for their capacity)
};

class LiteralScanner {
 public:
  /// Which matcher runs: Hyperscan where it is built in and the CPU can run it, else the
  /// portable prefilter; kPortable asks for the prefilter (tests of the fallback).
  enum class Engine { kBest, kPortable };

  LiteralScanner();
  /// `literals` must each be at least LiteralPrefilter::kWindow bytes long.
  explicit LiteralScanner(std::vector<std::string> literals, Engine engine = Engine::kBest);
  /// Two stages (see above): `first` and `whole` are indexes into `literals`, `whole` a
  /// subset of `first`. Without Hyperscan, or when `first` holds every literal, one stage.
  struct Stages {
    std::vector<std::size_t> first;
    std::vector<std::size_t> whole;
    std::size_t tail_lines = 0;
  };
  LiteralScanner(std::vector<std::string> literals, const Stages& stages,
                 Engine engine = Engine::kBest);
  ~LiteralScanner();
  LiteralScanner(const LiteralScanner& other);
  LiteralScanner& operator=(const LiteralScanner& other);
  LiteralScanner(LiteralScanner&&) noexcept;
  LiteralScanner& operator=(LiteralScanner&&) noexcept;

  /// Calls on_hit(position, literal_index) for each occurrence (roughly in ascending
  /// order; an occurrence may be reported twice). A literal that starts with '\n' asks for
  /// a line that starts with the rest: its position is where that line starts.
  void scan(std::string_view block, const std::function<void(std::size_t, std::size_t)>& on_hit);

  /// Finds the literals in `block` and counts its lines in one pass: a cache-sized piece
  /// at a time, the line count reading what the matcher has just brought into cache.
  /// `block` starts a line: a literal that starts with '\n' also matches at its start.
  /// Replaces `out`'s contents (its capacity is reused). With two stages (once prepared),
  /// `all_lines` asks for one scan of all the literals instead (out.complete then holds).
  void scan_block(std::string_view block, BlockScan& out, bool all_lines = false);

  /// Whether scan_block has two stages once prepare() has run.
  [[nodiscard]] bool two_stage() const;
  /// Compiles the first stage's literals (once, for every copy; any thread). Until it is
  /// done scan_block scans in one stage; it takes ~20 ms of CPU, so it pays only on a large
  /// file (log_reader.cc has it done on a thread of its own while it reads the head).
  void prepare() const;

  /// The bytes an occurrence of `literal` covers from the position reported (its length,
  /// less the leading '\n' of a line-start literal).
  [[nodiscard]] std::size_t hit_size(std::size_t literal) const;

  /// The literals, in index order (for benchmarks and debugging).
  [[nodiscard]] const std::vector<std::string>& literals() const;

  /// "hyperscan" or "prefilter": which engine runs (for benchmarks and debugging).
  [[nodiscard]] std::string_view engine() const;

  struct Compiled;  ///< the literals and their database (shared, immutable)
  struct Scratch;   ///< per-copy working memory

 private:
  /// Appends the occurrences of `set`'s literals reported at [begin, end) of `block` (wholly
  /// inside it), in order, their '\n' counted from `newlines` at `begin`; returns the count
  /// at `end`.
  std::uint64_t scan_range(const LiteralSet& set, std::string_view block, std::size_t begin,
                           std::size_t end, std::uint64_t newlines, std::vector<LiteralHit>& hits);

  std::shared_ptr<const Compiled> compiled_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace headroom
