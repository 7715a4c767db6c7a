// Loading the signature catalog: TOML (toml++) into Signature values, with every
// pattern compiled once by RE2 to reject a bad one at load time, naming the file
// and the signature, instead of failing in the middle of a scan.

#include "core/signatures/catalog.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/signatures/literal.h"
#include "core/toml.h"
#include "core/toml_text.h"

namespace headroom {

namespace {

constexpr std::string_view kKnownFields[] = {"pid",    "pids",  "killed_pid", "path",      "size",
                                             "signal", "errno", "exit_code",  "errno_name"};

Result<std::vector<std::string>> string_list(const toml::table& table, std::string_view key,
                                             const std::string& where) {
  std::vector<std::string> values;
  const toml::node* node = table.get(key);
  if (node == nullptr) return values;
  if (const auto* text = node->as_string()) {
    values.push_back(text->get());
    return values;
  }
  const toml::array* array = node->as_array();
  if (array == nullptr)
    return fail(Error::parse(fmt::format("{}: '{}' must be a list of strings", where, key)));
  for (const toml::node& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr)
      return fail(Error::parse(fmt::format("{}: '{}' must be a list of strings", where, key)));
    values.push_back(text->get());
  }
  return values;
}

Result<void> check_pattern(const std::string& pattern, const std::string& where) {
  RE2 compiled(pattern, RE2::Quiet);
  if (!compiled.ok()) {
    return fail(
        Error::parse(fmt::format("{}: bad pattern '{}': {}", where, pattern, compiled.error())));
  }
  for (const auto& [name, index] : compiled.NamedCapturingGroups()) {
    (void)index;
    if (std::find(std::begin(kKnownFields), std::end(kKnownFields), name) ==
        std::end(kKnownFields)) {
      return fail(
          Error::parse(fmt::format("{}: unknown field (?P<{}>...) in '{}'", where, name, pattern)));
    }
  }
  return {};
}

Result<Strength> parse_strength(std::string_view text, const std::string& where) {
  if (text == "decisive") return Strength::kDecisive;
  if (text == "strong") return Strength::kStrong;
  if (text == "suggestive") return Strength::kSuggestive;
  return fail(Error::parse(
      fmt::format("{}: strength must be decisive, strong or suggestive, got '{}'", where, text)));
}

bool known_location(std::string_view name) {
  return std::find(std::begin(kLocations), std::end(kLocations), name) != std::end(kLocations);
}

/// `kind` is "signature" or "location" (a [[location]] hint: `where` instead of a cause).
/// `checks` kPatterns: every pattern is compiled to prove it valid (what a user's file needs).
Result<Signature> parse_signature(const toml::table& table, std::string_view origin,
                                  std::size_t index, std::string_view kind, CatalogChecks checks) {
  Signature signature;
  signature.origin = std::string(origin);
  signature.id = table["id"].value_or(std::string());
  const std::string where = fmt::format("{}: {} #{}{}", origin, kind, index + 1,
                                        signature.id.empty() ? "" : " (" + signature.id + ")");
  if (signature.id.empty()) return fail(Error::parse(where + ": missing 'id'"));
  if (kind == "signal") {
    signature.cause = table["cause"].value_or(std::string());
    if (signature.cause.empty()) return fail(Error::parse(where + ": missing 'cause'"));
    const toml::array* numbers = table["signals"].as_array();
    if (numbers != nullptr) {
      for (const toml::node& item : *numbers) {
        const std::optional<std::int64_t> number = item.value<std::int64_t>();
        if (!number || *number < 1 || *number > 64)
          return fail(Error::parse(where + ": 'signals' must be signal numbers (1..64)"));
        signature.signals.push_back(static_cast<int>(*number));
      }
    }
    if (signature.signals.empty())
      return fail(Error::parse(where + ": needs 'signals', a list of signal numbers"));
  } else if (kind == "marker") {
    signature.marker = table["name"].value_or(std::string());
    if (signature.marker.empty()) return fail(Error::parse(where + ": missing 'name'"));
  } else if (kind == "location") {
    signature.where = table["where"].value_or(std::string());
    if (!known_location(signature.where))
      return fail(Error::parse(fmt::format(
          "{}: 'where' must be shm, shm_ipc, tmp or disk, got '{}'", where, signature.where)));
  } else {
    signature.cause = table["cause"].value_or(std::string());
    if (signature.cause.empty()) return fail(Error::parse(where + ": missing 'cause'"));
    signature.by_signal = signature.cause == "by_signal";
  }
  auto strength = parse_strength(table["strength"].value_or(std::string("strong")), where);
  if (!strength) return fail(strength.error());
  signature.strength = *strength;

  auto patterns = string_list(table, "patterns", where);
  if (!patterns) return fail(patterns.error());
  if (kind == "signal" && !patterns->empty())
    return fail(Error::parse(where + ": a [[signal]] entry has no patterns"));
  if (kind != "signal" && patterns->empty())
    return fail(Error::parse(where + ": needs at least one pattern"));
  if (checks == CatalogChecks::kPatterns) {
    for (const std::string& pattern : *patterns) {
      if (auto checked = check_pattern(pattern, where); !checked) return fail(checked.error());
    }
  }
  signature.patterns = std::move(*patterns);

  auto literals = string_list(table, "literals", where);
  if (!literals) return fail(literals.error());
  signature.literals = std::move(*literals);
  if (signature.literals.empty()) {
    // One literal per pattern; a pattern without one makes the whole signature run on every line.
    for (const std::string& pattern : signature.patterns) {
      std::string literal = required_literal(pattern);
      if (literal.empty()) {
        signature.literals.clear();
        break;
      }
      signature.literals.push_back(std::move(literal));
    }
  }

  for (const char* key : {"requires_context", "excludes_context"}) {
    std::string pattern = table[key].value_or(std::string());
    if (pattern.empty()) continue;
    if (checks == CatalogChecks::kPatterns) {
      RE2 compiled(pattern, RE2::Quiet);
      if (!compiled.ok()) {
        return fail(Error::parse(
            fmt::format("{}: bad {} '{}': {}", where, key, pattern, compiled.error())));
      }
    }
    (std::string_view(key) == "requires_context" ? signature.requires_context
                                                 : signature.excludes_context) = std::move(pattern);
  }
  const std::int64_t context_lines = table["context_lines"].value_or(std::int64_t{12});
  if (context_lines < 0 || context_lines > 64)
    return fail(Error::parse(where + ": context_lines must be in 0..64"));
  signature.context_lines = static_cast<std::size_t>(context_lines);
  signature.paste_only = table["paste_only"].value_or(false);
  signature.unless_followed_by = table["unless_followed_by"].value_or(std::string());
  signature.contradicts = table["contradicts"].value_or(std::string());
  const std::int64_t min_matches = table["min_matches"].value_or(std::int64_t{1});
  if (min_matches < 1 || min_matches > 1000)
    return fail(Error::parse(where + ": min_matches must be in 1..1000"));
  signature.min_matches = static_cast<std::uint64_t>(min_matches);
  signature.locate = table["locate"].value_or(table["cause_by_path"].value_or(false));
  if (const toml::node* node = table.get("by_location")) {
    const toml::table* map = node->as_table();
    if (map == nullptr)
      return fail(Error::parse(where + ": 'by_location' must be a table of location = cause"));
    for (const auto& [key, value] : *map) {
      const auto* cause = value.as_string();
      if (!known_location(key.str()) || cause == nullptr)
        return fail(Error::parse(fmt::format(
            "{}: by_location.{} must be one of shm, shm_ipc, tmp, disk with a cause string", where,
            key.str())));
      signature.by_location.emplace(std::string(key.str()), cause->get());
    }
    signature.locate = true;
  }
  if (signature.by_signal && signature.locate)
    return fail(Error::parse(where + ": a by_signal signature cannot also be located"));
  signature.explanation = table["explanation"].value_or(std::string());
  auto confirm = string_list(table, "confirm", where);
  if (!confirm) return fail(confirm.error());
  signature.confirm = std::move(*confirm);
  auto remedies = string_list(table, "remedies", where);
  if (!remedies) return fail(remedies.error());
  signature.remedies = std::move(*remedies);
  return signature;
}

/// Merges `extra` into `into`: a signature with a known id replaces the old one in place.
Result<void> merge(Catalog& into, Catalog extra) {
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < into.signatures.size(); ++i) position[into.signatures[i].id] = i;
  for (Signature& signature : extra.signatures) {
    const auto found = position.find(signature.id);
    if (found != position.end()) {
      into.signatures[found->second] = std::move(signature);
    } else {
      position[signature.id] = into.signatures.size();
      into.signatures.push_back(std::move(signature));
    }
  }
  return {};
}

}  // namespace

bool is_host_cause(std::string_view cause) {
  return std::find(std::begin(kHostCauses), std::end(kHostCauses), cause) != std::end(kHostCauses);
}

std::string_view to_string(Strength strength) {
  switch (strength) {
    case Strength::kDecisive:
      return "decisive";
    case Strength::kStrong:
      return "strong";
    case Strength::kSuggestive:
      return "suggestive";
  }
  return "strong";
}

Result<Catalog> parse_catalog(std::string_view toml_text, std::string_view origin,
                              CatalogChecks checks) {
  if (const auto control = find_toml_control(toml_text)) {
    return fail(Error::parse(
        fmt::format("{}:{}:{}: {}", origin, control->line, control->column, control->describe())));
  }
  toml::table root;
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& error) {
    const auto& begin = error.source().begin;
    return fail(Error::parse(
        fmt::format("{}:{}:{}: {}", origin, begin.line, begin.column, error.description())));
  }
  Catalog catalog;
  std::map<std::string, bool> seen;
  // An empty file is a valid, empty catalog.
  for (const std::string_view kind : {std::string_view("signature"), std::string_view("location"),
                                      std::string_view("signal"), std::string_view("marker")}) {
    const toml::node* list = root.get(kind);
    if (list == nullptr) continue;
    const toml::array* array = list->as_array();
    if (array == nullptr)
      return fail(Error::parse(
          fmt::format("{}: '{}' must be an array of tables ([[{}]])", origin, kind, kind)));
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::table* table = (*array)[i].as_table();
      if (table == nullptr)
        return fail(Error::parse(fmt::format("{}: {} #{} is not a table", origin, kind, i + 1)));
      auto signature = parse_signature(*table, origin, i, kind, checks);
      if (!signature) return fail(signature.error());
      if (seen[signature->id])
        return fail(Error::parse(fmt::format("{}: duplicate id '{}'", origin, signature->id)));
      seen[signature->id] = true;
      catalog.signatures.push_back(std::move(*signature));
    }
  }
  return catalog;
}

Result<Catalog> load_catalog(std::span<const std::filesystem::path> extra_dirs) {
  Catalog catalog;
  for (const auto& [name, text] : builtin_catalog_files()) {
    // The built-in files are checked whole by the tests (catalog_test.cc,
    // BuiltinCatalog.EveryFilePassesTheChecksOfAUserFile):
    // compiling their patterns again on every run would cost a third of explain's start.
    auto part = parse_catalog(text, fmt::format("builtin:{}", name), CatalogChecks::kStructure);
    if (!part) return fail(part.error());
    if (auto merged = merge(catalog, std::move(*part)); !merged) return fail(merged.error());
  }
  for (const std::filesystem::path& dir : extra_dirs) {
    std::error_code error;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_regular_file(dir, error)) {
      files.push_back(dir);
    } else {
      std::filesystem::directory_iterator it(dir, error);
      if (error) return fail(Error::from_errno(error.value(), dir.string()));
      for (const auto& entry : it) {
        if (entry.path().extension() == ".toml") files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      if (!in) return fail(Error::from_errno(errno, file.string()));
      std::ostringstream text;
      text << in.rdbuf();
      auto part = parse_catalog(text.str(), file.string());
      if (!part) return fail(part.error());
      if (auto merged = merge(catalog, std::move(*part)); !merged) return fail(merged.error());
    }
  }
  return catalog;
}

}  // namespace headroom
