#include "core/signatures/literal_scanner.h"

#include <algorithm>

#if defined(HEADROOM_HAVE_HYPERSCAN)
#include <hs/hs.h>
#endif

namespace headroom {

struct LiteralScanner::Compiled {
  std::vector<std::string> literals;
  std::size_t longest = 0;
  /// Literals that start with '\n' ("\n/tmp/": a line that starts so). Their occurrences
  /// are reported where the line starts, one byte after the match: the hit is on that line.
  std::vector<std::uint8_t> leading_newline;
  std::vector<std::size_t> line_start_literals;  ///< their indexes
  [[nodiscard]] std::size_t skip(std::size_t literal) const { return leading_newline[literal]; }
#if defined(HEADROOM_HAVE_HYPERSCAN)
  hs_database_t* database = nullptr;
  hs_scratch_t* prototype = nullptr;  ///< cloned into each copy's scratch
#endif
  LiteralPrefilter prefilter;  ///< when there is no database
  ~Compiled() {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    if (prototype != nullptr) hs_free_scratch(prototype);
    if (database != nullptr) hs_free_database(database);
#endif
  }
  [[nodiscard]] bool hyperscan() const {
#if defined(HEADROOM_HAVE_HYPERSCAN)
    return database != nullptr;
#else
    return false;
#endif
  }
};

struct LiteralScanner::Scratch {
#if defined(HEADROOM_HAVE_HYPERSCAN)
  hs_scratch_t* space = nullptr;
  ~Scratch() {
    if (space != nullptr) hs_free_scratch(space);
  }
#endif
};

namespace {

#if defined(HEADROOM_HAVE_HYPERSCAN)
/// A block-mode database of `compiled.literals` (ids are their indexes); left null when
/// Hyperscan cannot run here or refuses them.
void compile(LiteralScanner::Compiled& compiled) {
  const std::vector<std::string>& literals = compiled.literals;
  if (literals.empty() || hs_valid_platform() != HS_SUCCESS) return;
  std::vector<const char*> expressions;
  std::vector<unsigned> flags(literals.size(), 0);
  std::vector<unsigned> ids;
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i < literals.size(); ++i) {
    expressions.push_back(literals[i].data());
    ids.push_back(static_cast<unsigned>(i));
    lengths.push_back(literals[i].size());
  }
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions.data(), flags.data(), ids.data(), lengths.data(),
                           static_cast<unsigned>(literals.size()), HS_MODE_BLOCK, nullptr,
                           &compiled.database, &error) != HS_SUCCESS) {
    hs_free_compile_error(error);
    compiled.database = nullptr;
    return;
  }
  if (hs_alloc_scratch(compiled.database, &compiled.prototype) != HS_SUCCESS) {
    hs_free_database(compiled.database);
    compiled.database = nullptr;
  }
}

struct Callback {
  const std::vector<std::string>* literals;
  const std::function<void(std::size_t, std::size_t)>* on_hit;
};

/// scan_block's callback: occurrences that start before `end` (the rest belong to the
/// next piece, which starts there).
struct PieceCallback {
  const LiteralScanner::Compiled* compiled;
  std::vector<LiteralHit>* hits;
  std::size_t begin;
  std::size_t end;
};

int on_piece_match(unsigned id, unsigned long long /*from*/, unsigned long long to,
                   unsigned /*flags*/, void* context) {
  const auto* callback = static_cast<const PieceCallback*>(context);
  const std::size_t at =
      callback->begin + static_cast<std::size_t>(to) - callback->compiled->literals[id].size();
  if (at < callback->end)
    callback->hits->push_back(LiteralHit{at + callback->compiled->skip(id), id, 0});
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

LiteralScanner::LiteralScanner(std::vector<std::string> literals, Engine engine) {
  auto compiled = std::make_shared<Compiled>();
  compiled->literals = std::move(literals);
  for (std::size_t i = 0; i < compiled->literals.size(); ++i) {
    const std::string& literal = compiled->literals[i];
    compiled->longest = std::max(compiled->longest, literal.size());
    const bool leading = literal.size() > 1 && literal.front() == '\n';
    compiled->leading_newline.push_back(leading ? 1 : 0);
    if (leading) compiled->line_start_literals.push_back(i);
  }
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (engine == Engine::kBest) compile(*compiled);
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
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (compiled_->hyperscan()) {
    // hs_scan takes at most 4 GiB - 1: longer blocks go in overlapping pieces (an
    // occurrence in the overlap may be reported twice, which the contract allows).
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    const std::size_t overlap = compiled_->longest;
    for (std::size_t at = 0; at < block.size(); at += kPiece) {
      const std::size_t begin = at == 0 ? 0 : at - overlap;
      const std::string_view piece = block.substr(begin, kPiece + (at - begin));
      const std::function<void(std::size_t, std::size_t)> shifted = [&](std::size_t position,
                                                                        std::size_t literal) {
        on_hit(begin + position + compiled_->skip(literal), literal);
      };
      Callback callback{&compiled_->literals, &shifted};
      (void)hs_scan(compiled_->database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                    scratch_->space, on_match, &callback);
    }
    return;
  }
#endif
  compiled_->prefilter.scan(block, [&](std::size_t at, std::size_t literal) {
    on_hit(at + compiled_->skip(literal), literal);
  });
}

void LiteralScanner::scan_block(std::string_view block, BlockScan& out) {
  out.hits.clear();
  out.newlines = 0;
  // A piece fits in L2 with room to spare: the newline count after the matcher reads it
  // from cache, not memory.
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  const std::size_t overlap = compiled_ && compiled_->longest > 0 ? compiled_->longest - 1 : 0;
  for (std::size_t begin = 0; begin < block.size(); begin += kPiece) {
    const std::size_t end = std::min(block.size(), begin + kPiece);
    const std::size_t first = out.hits.size();
    if (begin == 0 && compiled_) {
      // The block starts a line: a literal that asks for a line start matches there too.
      for (std::size_t literal : compiled_->line_start_literals) {
        if (block.starts_with(std::string_view(compiled_->literals[literal]).substr(1)))
          out.hits.push_back(LiteralHit{0, literal, 0});
      }
    }
    if (compiled_ && !compiled_->literals.empty()) {
      // The piece and the first `overlap` bytes of the next: an occurrence that starts in
      // this piece is found here whole; one that starts in the next, there.
      const std::string_view piece = block.substr(begin, end - begin + overlap);
#if defined(HEADROOM_HAVE_HYPERSCAN)
      if (compiled_->hyperscan()) {
        PieceCallback callback{compiled_.get(), &out.hits, begin, end};
        (void)hs_scan(compiled_->database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                      scratch_->space, on_piece_match, &callback);
      } else
#endif
      {
        compiled_->prefilter.scan(piece, [&](std::size_t at, std::size_t literal) {
          if (begin + at < end)
            out.hits.push_back(LiteralHit{begin + at + compiled_->skip(literal), literal, 0});
        });
      }
      // Hyperscan reports by end position, the prefilter may report an occurrence twice.
      std::sort(out.hits.begin() + static_cast<std::ptrdiff_t>(first), out.hits.end());
      out.hits.erase(
          std::unique(out.hits.begin() + static_cast<std::ptrdiff_t>(first), out.hits.end(),
                      [](const LiteralHit& a, const LiteralHit& b) {
                        return a.at == b.at && a.literal == b.literal;
                      }),
          out.hits.end());
    }
    std::size_t counted = begin;
    for (std::size_t k = first; k < out.hits.size(); ++k) {
      LiteralHit& hit = out.hits[k];
      out.newlines +=
          LiteralPrefilter::count_newlines(block.data() + counted, block.data() + hit.at);
      counted = hit.at;
      hit.newlines = out.newlines;
    }
    out.newlines += LiteralPrefilter::count_newlines(block.data() + counted, block.data() + end);
  }
}

std::size_t LiteralScanner::hit_size(std::size_t literal) const {
  return compiled_->literals[literal].size() - compiled_->skip(literal);
}

const std::vector<std::string>& LiteralScanner::literals() const {
  static const std::vector<std::string> kNone;
  return compiled_ ? compiled_->literals : kNone;
}

std::string_view LiteralScanner::engine() const {
  return compiled_ && compiled_->hyperscan() ? "hyperscan" : "prefilter";
}

}  // namespace headroom
