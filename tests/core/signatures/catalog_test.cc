#include "core/signatures/catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ParseCatalog, ReadsEveryKey) {
  auto catalog = parse_catalog(R"(
[[signature]]
id = "x.one"
cause = "disk_full"
strength = "decisive"
patterns = ['wrote (?P<size>\d+) bytes to (?P<path>\S+): disk full']
requires_context = 'saving'
context_lines = 3
cause_by_path = true
explanation = "why"
confirm = ["path.space"]
remedies = ["free space"]
)",
                               "test.toml");
  ASSERT_TRUE(catalog.has_value()) << catalog.error().message;
  ASSERT_EQ(catalog->signatures.size(), 1U);
  const Signature& signature = catalog->signatures[0];
  EXPECT_EQ(signature.strength, Strength::kDecisive);
  EXPECT_EQ(signature.literals, std::vector<std::string>{": disk full"});
  EXPECT_EQ(signature.context_lines, 3U);
  EXPECT_TRUE(signature.locate);
  EXPECT_EQ(signature.origin, "test.toml");
}

TEST(ParseCatalog, ErrorsNameTheFileAndTheSignature) {
  const struct {
    std::string toml;
    const char* message_part;
  } cases[] = {
      {"[[signature]]\nid = 'a'\ncause = 'x'\npatterns = ['(unclosed']\n",
       "test.toml: signature #1 (a): bad pattern"},
      {"[[signature]]\nid = 'a'\ncause = 'x'\npatterns = ['(?P<colour>x)']\n",
       "unknown field (?P<colour>"},
      {"[[signature]]\nid = 'a'\npatterns = ['x']\n", "missing 'cause'"},
      {"[[signature]]\nid = 'a'\ncause = 'x'\n", "needs at least one pattern"},
      {"[[signature]]\nid = 'a'\ncause = 'x'\npatterns = ['x']\nstrength = 'huge'\n",
       "strength must be"},
      {"[[signature]\n", "test.toml:1:"},
      // Found by fuzzing: a control character where a table header's key starts made
      // toml++ 3.3 abort on an assertion (debug) or assume the impossible (clang release).
      {std::string("[[signature]]\nid = 'a'\n\n[\x01\0\0\0\x19[signature]]\n", 43),
       "test.toml:4:2: control character 0x01"},
      // Found by fuzzing too: the class is any character toml++ does not expect after a
      // table header's '[' (a newline, '=', '#', '.', '{'): its assertion or assumption is no
      // longer compiled in (core/toml.h), its own error branch answers.
      {"# a catalog\n[\n[[signature]]\nid = 'a'\n", "test.toml:2:"},
      {"[=]\n", "test.toml:1:"},
      {"[[#x]]\n", "test.toml:1:"},
      {"[ .a]\n", "test.toml:1:"},
      {"[{}]\n", "test.toml:1:"},
  };
  for (const auto& c : cases) {
    auto catalog = parse_catalog(c.toml, "test.toml");
    ASSERT_FALSE(catalog.has_value()) << c.toml;
    EXPECT_NE(catalog.error().message.find(c.message_part), std::string::npos)
        << catalog.error().message;
  }
}

/// A new directory for a user's catalog files, under the working directory (the test removes it).
std::filesystem::path catalog_dir(const std::string& tag) {
  const std::filesystem::path dir = std::filesystem::current_path() /
                                    ("headroom-catalog-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(LoadCatalog, UserSignaturesAddToAndReplaceBuiltinOnes) {
  const std::filesystem::path dir = catalog_dir("test");
  std::ofstream(dir / "mine.toml") << R"(
[[signature]]
id = "cuda.out_of_memory"
cause = "gpu_oom"
patterns = ['my replacement pattern']

[[signature]]
id = "site.scratch_quota"
cause = "disk_full"
strength = "decisive"
patterns = ['scratch quota exceeded for (?P<path>\S+)']
)";
  const std::vector<std::filesystem::path> dirs = {dir};
  auto catalog = load_catalog(dirs);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(catalog.has_value()) << catalog.error().message;
  const auto& signatures = catalog->signatures;
  const auto replaced = std::find_if(signatures.begin(), signatures.end(), [](const Signature& s) {
    return s.id == "cuda.out_of_memory";
  });
  ASSERT_NE(replaced, signatures.end());
  EXPECT_EQ(replaced->patterns, std::vector<std::string>{"my replacement pattern"});
  EXPECT_EQ(signatures.back().id, "site.scratch_quota");
  EXPECT_EQ(signatures.size(), testing::builtin_catalog().signatures.size() + 1);
}

TEST(LoadCatalog, AUserFileWithABadPatternIsStillRefused) {
  // explain's start skips compiling the built-in patterns (the test below proves them); a
  // user's file is still checked whole.
  const std::filesystem::path dir = catalog_dir("bad");
  struct Case {
    const char* file;
    const char* rest;  ///< the signature's keys after id and cause
    const char* error;
  };
  const Case cases[] = {
      {"syntax.toml", "patterns = ['unbalanced (group']", "bad pattern"},
      {"field.toml", "patterns = ['quota for (?P<directory>\\S+)']", "unknown field"},
      {"context.toml", "patterns = ['quota exceeded']\nrequires_context = 'bad [class'",
       "bad requires_context"},
  };
  for (const auto& [file, rest, error] : cases) {
    std::ofstream(dir / file) << "[[signature]]\nid = \"site.broken\"\ncause = \"disk_full\"\n"
                              << rest << "\n";
    const std::vector<std::filesystem::path> dirs = {dir / file};
    auto catalog = load_catalog(dirs);
    EXPECT_FALSE(catalog.has_value()) << file;
    if (!catalog) {
      EXPECT_NE(catalog.error().message.find(file), std::string::npos) << catalog.error().message;
      EXPECT_NE(catalog.error().message.find(error), std::string::npos) << catalog.error().message;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(BuiltinCatalog, EveryFilePassesTheChecksOfAUserFile) {
  // load_catalog parses the built-in files with CatalogChecks::kStructure (no pattern is
  // compiled at start): this is where their patterns, fields and contexts are proven.
  ASSERT_FALSE(builtin_catalog_files().empty());
  for (const auto& [name, text] : builtin_catalog_files()) {
    auto checked = parse_catalog(text, name, CatalogChecks::kPatterns);
    ASSERT_TRUE(checked.has_value()) << checked.error().message;
    auto loaded = parse_catalog(text, name, CatalogChecks::kStructure);
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    ASSERT_EQ(checked->signatures.size(), loaded->signatures.size()) << name;
    for (std::size_t i = 0; i < checked->signatures.size(); ++i) {
      EXPECT_EQ(checked->signatures[i].patterns, loaded->signatures[i].patterns);
      EXPECT_EQ(checked->signatures[i].literals, loaded->signatures[i].literals);
      EXPECT_EQ(checked->signatures[i].requires_context, loaded->signatures[i].requires_context);
      EXPECT_EQ(checked->signatures[i].excludes_context, loaded->signatures[i].excludes_context);
    }
  }
}

TEST(BuiltinCatalog, EveryLiteralIsLongEnoughForAFastScan) {
  for (const Signature& signature : testing::builtin_catalog().signatures) {
    if (!signature.signals.empty() || signature.paste_only) continue;  // never scanned for
    EXPECT_FALSE(signature.literals.empty()) << signature.id << " would run on every line";
    for (const std::string& literal : signature.literals) {
      EXPECT_GE(literal.size(), 6U) << signature.id << ": '" << literal << "'";
    }
  }
}

// Table-driven over the catalog itself: each signature must match at least one
// line of the project's corpus (tests/logs/<cause>/*.log), and there map to a
// cause (its own, or one its path classification gives).
TEST(BuiltinCatalog, EverySignatureMatchesALineOfTheTestCorpus) {
  std::map<std::string, std::set<std::string>> causes_by_signature;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(HEADROOM_TEST_DATA) + "/logs")) {
    if (!entry.is_regular_file()) continue;
    LogAnalyzer analyzer(testing::builtin_compiled());
    analyzer.feed(read_file(entry.path()));
    for (const Candidate& candidate : analyzer.finish().candidates) {
      for (const std::string& id : candidate.signatures)
        causes_by_signature[id].insert(candidate.cause);
    }
  }
  for (const Signature& signature : testing::builtin_catalog().signatures) {
    // A signal's meaning has no patterns, and a location hint names no cause: both are
    // exercised through the reports and located errors that use them (analyzer_test).
    if (!signature.signals.empty() || !signature.where.empty() || !signature.marker.empty())
      continue;
    const auto found = causes_by_signature.find(signature.id);
    if (found == causes_by_signature.end()) {
      ADD_FAILURE() << signature.id << " matches no line in tests/logs";
      continue;
    }
    if (!signature.locate && !signature.by_signal) {
      EXPECT_EQ(found->second, std::set<std::string>{signature.cause}) << signature.id;
    }
  }
}

}  // namespace
}  // namespace headroom
