#include "core/signatures/literal_scanner.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>

#if defined(HEADROOM_HAVE_HYPERSCAN)
#include <hs/hs.h>
#endif

namespace headroom {

/// The literals a scan reports, and those of them one database looks for (ids are indexes into
/// all of them). A literal that starts with '\n' ("\n/tmp/": a line that starts so) is
/// reported where that line starts, one byte after the match.
struct LiteralSet {
  const std::vector<std::string>* literals = nullptr;
  std::vector<std::size_t> ids;  ///< the literals looked for
  std::size_t longest = 0;
  std::vector<std::uint8_t> leading_newline;     ///< for every literal
  std::vector<std::size_t> line_start_literals;  ///< those of `ids` that start with '\n'
#if defined(HEADROOM_HAVE_HYPERSCAN)
  hs_database_t* database = nullptr;
#endif
  LiteralSet(const std::vector<std::string>& all, std::vector<std::size_t> looked_for)
      : literals(&all), ids(std::move(looked_for)) {
    for (const std::string& literal : all)
      leading_newline.push_back(literal.size() > 1 && literal.front() == '\n' ? 1 : 0);
    for (std::size_t id : ids) {
      longest = std::max(longest, all[id].size());
      if (leading_newline[id] != 0) line_start_literals.push_back(id);
    }
  }
  LiteralSet(const LiteralSet&) = delete;
  LiteralSet& operator=(const LiteralSet&) = delete;
  ~LiteralSet() {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    if (database != nullptr) hs_free_database(database);
#endif
  }
  [[nodiscard]] std::size_t skip(std::size_t literal) const { return leading_newline[literal]; }
  [[nodiscard]] bool compiled() const {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    return database != nullptr;
#else
    return false;
#endif
  }
};

namespace {
std::vector<std::size_t> every_index(std::size_t count) {
  std::vector<std::size_t> indexes(count);
  std::iota(indexes.begin(), indexes.end(), std::size_t{0});
  return indexes;
}
}  // namespace

struct LiteralScanner::Compiled {
  Compiled(std::vector<std::string> strings, const Stages& stages)
      : literals(std::move(strings)),
        all(literals, every_index(literals.size())),
        first(literals, stages.first),
        whole(literals.size(), 0),
        tail_lines(stages.tail_lines) {
    for (std::size_t literal : stages.whole) whole[literal] = 1;
  }
  std::vector<std::string> literals;
  LiteralSet all;
  /// The first stage's literals, compiled by prepare() (most logs are read in one stage:
  /// compiling them takes ~20 ms of CPU); until they are, scan_block scans in one stage.
  mutable LiteralSet first;
  mutable std::once_flag first_compiled;
  mutable std::atomic<bool> first_ready{false};
  bool two_stages = false;          ///< asked for, and Hyperscan runs
  std::vector<std::uint8_t> whole;  ///< found by the first stage: all literals on every line
  std::size_t tail_lines = 0;
#if defined(HEADROOM_HAVE_HYPERSCAN)
  /// Cloned into each copy's scratch, which grows for `first` when it first scans in two stages.
  hs_scratch_t* prototype = nullptr;
#endif
  LiteralPrefilter prefilter;  ///< when there is no database
  ~Compiled() {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    if (prototype != nullptr) hs_free_scratch(prototype);
#endif
  }
  [[nodiscard]] bool hyperscan() const { return all.compiled(); }
};

struct LiteralScanner::Scratch {
#if defined(HEADROOM_HAVE_HYPERSCAN)
  hs_scratch_t* space = nullptr;
  bool first_room = false;  ///< grown for the first stage's database
  ~Scratch() {
    if (space != nullptr) hs_free_scratch(space);
  }
#endif
};

namespace {

#if defined(HEADROOM_HAVE_HYPERSCAN)
/// A block-mode database of `set`'s literals, with room for it in `scratch`; left null when
/// Hyperscan cannot run here or refuses them.
void compile(LiteralSet& set, hs_scratch_t*& scratch) {
  if (set.ids.empty() || hs_valid_platform() != HS_SUCCESS) return;
  std::vector<const char*> expressions;
  std::vector<unsigned> flags(set.ids.size(), 0);
  std::vector<unsigned> ids;
  std::vector<std::size_t> lengths;
  for (std::size_t id : set.ids) {
    expressions.push_back((*set.literals)[id].data());
    ids.push_back(static_cast<unsigned>(id));
    lengths.push_back((*set.literals)[id].size());
  }
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions.data(), flags.data(), ids.data(), lengths.data(),
                           static_cast<unsigned>(ids.size()), HS_MODE_BLOCK, nullptr, &set.database,
                           &error) != HS_SUCCESS) {
    hs_free_compile_error(error);
    set.database = nullptr;
    return;
  }
  if (hs_alloc_scratch(set.database, &scratch) != HS_SUCCESS) {
    hs_free_database(set.database);
    set.database = nullptr;
  }
}

struct Callback {
  const std::vector<std::string>* literals;
  const std::function<void(std::size_t, std::size_t)>* on_hit;
};

/// scan_range's callback: occurrences that start before `end` (the rest belong to the next
/// piece) and are reported in [begin, limit) (the range's).
struct PieceCallback {
  const LiteralSet* set;
  std::vector<LiteralHit>* hits;
  std::size_t from;   ///< where the piece scanned starts in the block
  std::size_t begin;  ///< the range's first position
  std::size_t end;    ///< the first start that belongs to the next piece
  std::size_t limit;  ///< the range's end
};

int on_piece_match(unsigned id, unsigned long long /*from*/, unsigned long long to,
                   unsigned /*flags*/, void* context) {
  const auto* callback = static_cast<const PieceCallback*>(context);
  const std::size_t at =
      callback->from + static_cast<std::size_t>(to) - (*callback->set->literals)[id].size();
  const std::size_t reported = at + callback->set->skip(id);
  if (at < callback->end && reported >= callback->begin && reported < callback->limit)
    callback->hits->push_back(LiteralHit{reported, id, 0});
  return 0;
}

int on_match(unsigned id, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
             void* context) {
  const auto* callback = static_cast<const Callback*>(context);
  const std::size_t length = (*callback->literals)[id].size();
  (*callback->on_hit)(static_cast<std::size_t>(to) - length, id);
  return 0;  // go on
}
#endif

std::unique_ptr<LiteralScanner::Scratch> scratch_for(const LiteralScanner::Compiled* compiled) {
  auto scratch = std::make_unique<LiteralScanner::Scratch>();
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (compiled != nullptr && compiled->hyperscan()) {
    if (hs_clone_scratch(compiled->prototype, &scratch->space) != HS_SUCCESS)
      throw std::bad_alloc();
  }
#else
  (void)compiled;
#endif
  return scratch;
}

}  // namespace

LiteralScanner::LiteralScanner() : scratch_(std::make_unique<Scratch>()) {}
LiteralScanner::~LiteralScanner() = default;
LiteralScanner::LiteralScanner(LiteralScanner&&) noexcept = default;
LiteralScanner& LiteralScanner::operator=(LiteralScanner&&) noexcept = default;

LiteralScanner::LiteralScanner(const LiteralScanner& other)
    : compiled_(other.compiled_), scratch_(scratch_for(other.compiled_.get())) {}

LiteralScanner& LiteralScanner::operator=(const LiteralScanner& other) {
  if (this != &other) {
    compiled_ = other.compiled_;
    scratch_ = scratch_for(compiled_.get());
  }
  return *this;
}

LiteralScanner::LiteralScanner(std::vector<std::string> literals, Engine engine)
    : LiteralScanner(std::move(literals), Stages{}, engine) {}

LiteralScanner::LiteralScanner(std::vector<std::string> literals, const Stages& stages,
                               Engine engine) {
  auto compiled = std::make_shared<Compiled>(std::move(literals), stages);
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (engine == Engine::kBest) {
    compile(compiled->all, compiled->prototype);
    compiled->two_stages = compiled->all.compiled() && !compiled->first.ids.empty() &&
                           compiled->first.ids.size() < compiled->literals.size();
  }
#else
  (void)engine;
#endif
  if (!compiled->hyperscan()) compiled->prefilter = LiteralPrefilter(compiled->literals);
  compiled_ = std::move(compiled);
  scratch_ = scratch_for(compiled_.get());
}

void LiteralScanner::scan(std::string_view block,
                          const std::function<void(std::size_t, std::size_t)>& on_hit) {
  if (!compiled_) return;
  const LiteralSet& all = compiled_->all;
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (compiled_->hyperscan()) {
    // hs_scan takes at most 4 GiB - 1: longer blocks go in overlapping pieces (an
    // occurrence in the overlap may be reported twice, which the contract allows).
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    const std::size_t overlap = all.longest;
    for (std::size_t at = 0; at < block.size(); at += kPiece) {
      const std::size_t begin = at == 0 ? 0 : at - overlap;
      const std::string_view piece = block.substr(begin, kPiece + (at - begin));
      const std::function<void(std::size_t, std::size_t)> shifted = [&](std::size_t position,
                                                                        std::size_t literal) {
        on_hit(begin + position + all.skip(literal), literal);
      };
      Callback callback{&compiled_->literals, &shifted};
      (void)hs_scan(all.database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                    scratch_->space, on_match, &callback);
    }
    return;
  }
#endif
  compiled_->prefilter.scan(
      block, [&](std::size_t at, std::size_t literal) { on_hit(at + all.skip(literal), literal); });
}

std::uint64_t LiteralScanner::scan_range(const LiteralSet& set, std::string_view block,
                                         std::size_t begin, std::size_t end, std::uint64_t newlines,
                                         std::vector<LiteralHit>& hits) {
  // A piece fits in L2 with room to spare: the newline count after the matcher reads it
  // from cache, not memory.
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  const std::size_t overlap = set.longest > 0 ? set.longest - 1 : 0;
  for (std::size_t piece_begin = begin; piece_begin < end; piece_begin += kPiece) {
    const std::size_t piece_end = std::min(end, piece_begin + kPiece);
    const std::size_t first = hits.size();
    if (piece_begin == 0) {
      // The block starts a line: a literal that asks for a line start matches there too.
      for (std::size_t literal : set.line_start_literals) {
        if (block.starts_with(std::string_view((*set.literals)[literal]).substr(1)))
          hits.push_back(LiteralHit{0, literal, 0});
      }
    }
    if (!set.ids.empty()) {
      // The piece and the first `overlap` bytes of the next: an occurrence that starts in
      // this piece is found here whole; one that starts in the next, there. A range's first
      // piece also looks at the '\n' before it, for the literals that ask for a line start.
      const std::size_t from = piece_begin == begin && begin > 0 ? begin - 1 : piece_begin;
      const std::string_view piece = block.substr(from, piece_end - from + overlap);
#if defined(HEADROOM_HAVE_HYPERSCAN)
      if (set.compiled()) {
        PieceCallback callback{&set, &hits, from, begin, piece_end, end};
        (void)hs_scan(set.database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                      scratch_->space, on_piece_match, &callback);
      } else
#endif
      {
        compiled_->prefilter.scan(piece, [&](std::size_t at, std::size_t literal) {
          const std::size_t reported = from + at + set.skip(literal);
          if (from + at < piece_end && reported >= begin && reported < end)
            hits.push_back(LiteralHit{reported, literal, 0});
        });
      }
      // Hyperscan reports by end position, the prefilter may report an occurrence twice.
      std::sort(hits.begin() + static_cast<std::ptrdiff_t>(first), hits.end());
      hits.erase(std::unique(hits.begin() + static_cast<std::ptrdiff_t>(first), hits.end(),
                             [](const LiteralHit& a, const LiteralHit& b) {
                               return a.at == b.at && a.literal == b.literal;
                             }),
                 hits.end());
    }
    std::size_t counted = piece_begin;
    for (std::size_t k = first; k < hits.size(); ++k) {
      LiteralHit& hit = hits[k];
      newlines += LiteralPrefilter::count_newlines(block.data() + counted, block.data() + hit.at);
      counted = hit.at;
      hit.newlines = newlines;
    }
    newlines += LiteralPrefilter::count_newlines(block.data() + counted, block.data() + piece_end);
  }
  return newlines;
}

void LiteralScanner::scan_block(std::string_view block, BlockScan& out, bool all_lines) {
  out.hits.clear();
  out.newlines = 0;
  out.complete = true;
  out.tail = 0;
  if (!compiled_) {
    out.newlines = LiteralPrefilter::count_newlines(block.data(), block.data() + block.size());
    return;
  }
  if (all_lines || !two_stage() || !compiled_->first_ready.load(std::memory_order_acquire)) {
    out.newlines = scan_range(compiled_->all, block, 0, block.size(), 0, out.hits);
    return;
  }
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (!scratch_->first_room) {
    if (hs_alloc_scratch(compiled_->first.database, &scratch_->space) != HS_SUCCESS)
      throw std::bad_alloc();
    scratch_->first_room = true;
  }
#endif
  out.first.clear();
  out.newlines = scan_range(compiled_->first, block, 0, block.size(), 0, out.first);
  const std::vector<LiteralHit>& first = out.first;
  const std::size_t tail_lines = compiled_->tail_lines;
  // Every line from `full` on gets all its hits: the block's last `tail_lines` lines that
  // end in '\n' (and what follows them), and from `tail_lines` lines above the first
  // `whole` literal on.
  std::size_t full = block.size();
  std::uint64_t full_newlines = out.newlines;
  {
    std::size_t found = 0;
    for (; found <= tail_lines; ++found) {
      const void* nl = full == 0 ? nullptr : memrchr(block.data(), '\n', full);
      if (nl == nullptr) break;
      full = static_cast<std::size_t>(static_cast<const char*>(nl) - block.data());
    }
    if (found <= tail_lines) {  // no more lines than that: all of them
      full = 0;
      full_newlines = 0;
    } else {
      full += 1;
      full_newlines = out.newlines - tail_lines;
    }
  }
  const auto line_start = [&](std::size_t at) -> std::size_t {
    const void* nl = at == 0 ? nullptr : memrchr(block.data(), '\n', at);
    return nl == nullptr
               ? 0
               : static_cast<std::size_t>(static_cast<const char*>(nl) - block.data()) + 1;
  };
  const auto trigger = std::find_if(first.begin(), first.end(), [&](const LiteralHit& hit) {
    return compiled_->whole[hit.literal] != 0;
  });
  if (trigger != first.end()) {
    std::size_t begin = line_start(trigger->at);
    std::uint64_t newlines = trigger->newlines;
    for (std::size_t back = 0; back < tail_lines && begin > 0; ++back) {
      begin = line_start(begin - 1);
      --newlines;
    }
    if (begin < full) {
      full = begin;
      full_newlines = newlines;
    }
  }
  out.complete = full == 0;
  out.tail = full;
  // The lines before it that the first stage found something on, runs of adjacent ones
  // together.
  const auto line_end = [&](std::size_t at) {
    const void* nl = std::memchr(block.data() + at, '\n', block.size() - at);
    return nl == nullptr
               ? block.size()
               : static_cast<std::size_t>(static_cast<const char*>(nl) - block.data()) + 1;
  };
  for (std::size_t i = 0; i < first.size() && first[i].at < full;) {
    const std::size_t begin = line_start(first[i].at);
    const std::uint64_t newlines = first[i].newlines;
    std::size_t run_end = line_end(first[i].at);
    std::uint64_t lines = newlines + 1;  // the '\n' count before `run_end`
    for (++i; i < first.size(); ++i) {
      if (first[i].at < run_end) continue;
      if (first[i].newlines != lines) break;  // not the next line: a new run
      run_end = line_end(first[i].at);
      ++lines;
    }
    (void)scan_range(compiled_->all, block, begin, std::min(run_end, full), newlines, out.hits);
  }
  (void)scan_range(compiled_->all, block, full, block.size(), full_newlines, out.hits);
}

bool LiteralScanner::two_stage() const { return compiled_ && compiled_->two_stages; }

void LiteralScanner::prepare() const {
  if (!two_stage()) return;
  std::call_once(compiled_->first_compiled, [&] {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    hs_scratch_t* scratch = nullptr;
    compile(compiled_->first, scratch);
    if (scratch != nullptr) hs_free_scratch(scratch);
    // Refused by Hyperscan: one stage.
    compiled_->first_ready.store(compiled_->first.compiled(), std::memory_order_release);
#endif
  });
}

std::size_t LiteralScanner::hit_size(std::size_t literal) const {
  return compiled_->literals[literal].size() - compiled_->all.skip(literal);
}

const std::vector<std::string>& LiteralScanner::literals() const {
  static const std::vector<std::string> kNone;
  return compiled_ ? compiled_->literals : kNone;
}

std::string_view LiteralScanner::engine() const {
  return compiled_ && compiled_->hyperscan() ? "hyperscan" : "prefilter";
}

}  // namespace headroom
