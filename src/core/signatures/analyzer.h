#pragma once
// The streaming log analyzer: bytes in (any chunking), a Diagnosis out. One
// pass, memory bounded by the catalog, not by the log: a literal prefilter
// skips the ordinary lines, RE2 runs only on lines that contain a signature's
// literal, and only a small ring of recent lines and a few evidence lines per
// signature are kept.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/signatures/catalog.h"
#include "core/signatures/diagnosis.h"
#include "core/signatures/literal_scanner.h"

namespace headroom {

/// A catalog compiled for scanning (RE2 programs, the literal database). Compiling takes
/// tens of milliseconds; analyzers made from one compiled catalog share it.
struct CompiledCatalog;
[[nodiscard]] std::shared_ptr<const CompiledCatalog> compile_catalog(const Catalog& catalog);

/// Reads a log incrementally and reasons about what it says.
class LogAnalyzer {
 public:
  /// Compiles the catalog's patterns; `catalog` need not outlive the analyzer.
  /// Patterns were validated by load_catalog, so this cannot fail.
  explicit LogAnalyzer(const Catalog& catalog);
  /// Shares an already compiled catalog (cheap: only scratch space is made).
  explicit LogAnalyzer(std::shared_ptr<const CompiledCatalog> compiled);
  ~LogAnalyzer();
  LogAnalyzer(const LogAnalyzer&) = delete;
  LogAnalyzer& operator=(const LogAnalyzer&) = delete;

  /// Starts a new source (file): line numbers restart at 1 and evidence names it.
  /// Optional: without it, everything is one source named "".
  void begin_source(std::string name);
  /// Feeds the next bytes of the current source; a chunk may split a line anywhere.
  void feed(std::string_view bytes);
  /// Whether the current source's bytes reach the scan as they are (no container envelope
  /// to undo, as decided from its first line): only then may feed_scanned be used.
  [[nodiscard]] bool passes_through() const;
  /// feed(bytes) for a source that passes_through(), with `scan` made of exactly these
  /// bytes already by literal_scanner().scan_block (on another thread, say): the same
  /// result as feed(bytes). `scan` is used up.
  void feed_scanned(std::string_view bytes, BlockScan& scan);
  /// A scanner of the catalog's literals with its own scratch space, for feed_scanned.
  [[nodiscard]] LiteralScanner literal_scanner() const;
  /// Tells the analyzer how the job ended, when the caller knows (headroom run).
  void note_exit(std::optional<int> exit_code, std::optional<int> signal);
  /// Ends the last line and reasons over everything seen. Call once.
  [[nodiscard]] Diagnosis finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// The catalog's patterns as POSIX ERE lines for `grep -E -f` (benchmark and
/// debugging aid; patterns RE2 accepts but ERE does not are approximated).
[[nodiscard]] std::string patterns_as_ere(const Catalog& catalog);

/// The literals explain's scan looks for, one a line, a newline written "\n" and a
/// backslash "\\" (what bench/explain/floor.cc reads to measure the matcher alone).
[[nodiscard]] std::string literals_as_lines(const Catalog& catalog);

}  // namespace headroom
