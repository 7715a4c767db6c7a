#pragma once
// Finds every occurrence of the catalog's literals in a block: the first stage of
// explain's scan (RE2 runs only on the lines a literal was found in). Hyperscan (or
// Vectorscan, its port to other CPUs) matches all literals together with vectorized
// multi-literal search; where it is not built in, or the CPU lacks what it needs
// (hs_valid_platform), the sampled-window LiteralPrefilter does the same job, slower.
//
// The compiled literals are shared by copies (several analyzers of one catalog); each
// copy has its own scratch space, so copies may scan on different threads.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/signatures/prefilter.h"

namespace headroom {

class LiteralScanner {
 public:
  LiteralScanner();
  /// `literals` must each be at least LiteralPrefilter::kWindow bytes long.
  explicit LiteralScanner(std::vector<std::string> literals);
  ~LiteralScanner();
  LiteralScanner(const LiteralScanner& other);
  LiteralScanner& operator=(const LiteralScanner& other);
  LiteralScanner(LiteralScanner&&) noexcept;
  LiteralScanner& operator=(LiteralScanner&&) noexcept;

  /// Calls on_hit(position, literal_index) for each occurrence (roughly in ascending
  /// order; an occurrence may be reported twice).
  void scan(std::string_view block, const std::function<void(std::size_t, std::size_t)>& on_hit);

  /// "hyperscan" or "prefilter": which engine runs (for benchmarks and debugging).
  [[nodiscard]] std::string_view engine() const;

  struct Compiled;  ///< the literals and their database (shared, immutable)
  struct Scratch;   ///< per-copy working memory

 private:
  std::shared_ptr<const Compiled> compiled_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace headroom
