#include "core/signatures/literal_scanner.h"

#include <algorithm>

#if defined(HEADROOM_HAVE_HYPERSCAN)
#include <hs/hs.h>
#endif

namespace headroom {

#if defined(HEADROOM_HAVE_HYPERSCAN)
struct LiteralScanner::Hyperscan {
  hs_database_t* database = nullptr;
  hs_scratch_t* scratch = nullptr;
  ~Hyperscan() {
    if (scratch != nullptr) hs_free_scratch(scratch);
    if (database != nullptr) hs_free_database(database);
  }
};

namespace {

/// A block-mode database of `literals` (ids are their indexes), or null when Hyperscan
/// cannot run here or refuses them.
std::unique_ptr<LiteralScanner::Hyperscan> compile(const std::vector<std::string>& literals) {
  if (literals.empty() || hs_valid_platform() != HS_SUCCESS) return nullptr;
  std::vector<const char*> expressions;
  std::vector<unsigned> flags(literals.size(), 0);
  std::vector<unsigned> ids;
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i < literals.size(); ++i) {
    expressions.push_back(literals[i].data());
    ids.push_back(static_cast<unsigned>(i));
    lengths.push_back(literals[i].size());
  }
  auto compiled = std::make_unique<LiteralScanner::Hyperscan>();
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions.data(), flags.data(), ids.data(), lengths.data(),
                           static_cast<unsigned>(literals.size()), HS_MODE_BLOCK, nullptr,
                           &compiled->database, &error) != HS_SUCCESS) {
    hs_free_compile_error(error);
    return nullptr;
  }
  if (hs_alloc_scratch(compiled->database, &compiled->scratch) != HS_SUCCESS) return nullptr;
  return compiled;
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

}  // namespace
#else
struct LiteralScanner::Hyperscan {};
#endif

LiteralScanner::LiteralScanner() = default;
LiteralScanner::~LiteralScanner() = default;
LiteralScanner::LiteralScanner(LiteralScanner&&) noexcept = default;
LiteralScanner& LiteralScanner::operator=(LiteralScanner&&) noexcept = default;

LiteralScanner::LiteralScanner(std::vector<std::string> literals) : literals_(std::move(literals)) {
#if defined(HEADROOM_HAVE_HYPERSCAN)
  hyperscan_ = compile(literals_);
#endif
  if (!hyperscan_) prefilter_ = LiteralPrefilter(literals_);
}

void LiteralScanner::scan(std::string_view block,
                          const std::function<void(std::size_t, std::size_t)>& on_hit) {
#if defined(HEADROOM_HAVE_HYPERSCAN)
  if (hyperscan_) {
    // hs_scan takes at most 4 GiB - 1: longer blocks go in overlapping pieces (an
    // occurrence in the overlap may be reported twice, which the contract allows).
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    std::size_t overlap = 0;
    for (const std::string& literal : literals_) overlap = std::max(overlap, literal.size());
    for (std::size_t at = 0; at < block.size(); at += kPiece) {
      const std::size_t begin = at == 0 ? 0 : at - overlap;
      const std::string_view piece = block.substr(begin, kPiece + (at - begin));
      const std::function<void(std::size_t, std::size_t)> shifted =
          [&](std::size_t position, std::size_t literal) { on_hit(begin + position, literal); };
      Callback callback{&literals_, begin == 0 ? &on_hit : &shifted};
      (void)hs_scan(hyperscan_->database, piece.data(), static_cast<unsigned>(piece.size()), 0,
                    hyperscan_->scratch, on_match, &callback);
    }
    return;
  }
#endif
  prefilter_.scan(block, on_hit);
}

std::string_view LiteralScanner::engine() const { return hyperscan_ ? "hyperscan" : "prefilter"; }

}  // namespace headroom
