#pragma once
// Test helpers: run the built-in catalog over files or strings, as explain does.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/explain/log_reader.h"
#include "core/signatures/analyzer.h"
#include "core/signatures/catalog.h"

namespace headroom::testing {

inline const Catalog& builtin_catalog() {
  static const Catalog catalog = [] {
    auto loaded = load_catalog({});
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().message);
    return loaded ? *loaded : Catalog{};
  }();
  return catalog;
}

/// The built-in catalog compiled once for all tests (compiling takes tens of milliseconds).
inline std::shared_ptr<const CompiledCatalog> builtin_compiled() {
  static const std::shared_ptr<const CompiledCatalog> compiled = compile_catalog(builtin_catalog());
  return compiled;
}

/// Analyses `text` fed in chunks of `chunk` bytes (0: all at once).
inline Diagnosis analyze_text(std::string_view text, std::size_t chunk = 0) {
  LogAnalyzer analyzer(builtin_compiled());
  if (chunk == 0) chunk = text.size() + 1;
  for (std::size_t at = 0; at < text.size(); at += chunk) analyzer.feed(text.substr(at, chunk));
  return analyzer.finish();
}

inline Diagnosis analyze_files(const std::vector<std::filesystem::path>& files) {
  LogAnalyzer analyzer(builtin_compiled());
  for (const auto& file : files) {
    auto fed = feed_file(analyzer, file, files.size() > 1 ? file.filename().string() : "");
    EXPECT_TRUE(fed.has_value()) << file;
  }
  return analyzer.finish();
}

inline std::string verdict_cause(const Diagnosis& diagnosis) {
  return diagnosis.verdict() != nullptr ? diagnosis.verdict()->cause : "none";
}

}  // namespace headroom::testing
