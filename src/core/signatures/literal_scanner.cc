#include "core/signatures/literal_scanner.h"

#include <algorithm>

#if defined(HEADROOM_HAVE_HYPERSCAN)
#include <hs/hs.h>
#endif

namespace headroom {

struct LiteralScanner::Compiled {
  std::vector<std::string> literals;
  std::size_t longest = 0;
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

LiteralScanner::LiteralScanner(std::vector<std::string> literals) {
  auto compiled = std::make_shared<Compiled>();
  compiled->literals = std::move(literals);
  for (const std::string& literal : compiled->literals)
    compiled->longest = std::max(compiled->longest, literal.size());
#if defined(HEADROOM_HAVE_HYPERSCAN)
  compile(*compiled);
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
      const std::function<void(std::size_t, std::size_t)> shifted =
          [&](std::size_t position, std::size_t literal) { on_hit(begin + position, literal); };
      Callback callback{&compiled_->literals, begin == 0 ? &on_hit : &shifted};
      (void)hs_scan(compiled_->database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                    scratch_->space, on_match, &callback);
    }
    return;
  }
#endif
  compiled_->prefilter.scan(block, on_hit);
}

std::string_view LiteralScanner::engine() const {
  return compiled_ && compiled_->hyperscan() ? "hyperscan" : "prefilter";
}

}  // namespace headroom
