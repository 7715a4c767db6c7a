#include "core/signatures/literal.h"

#include <cctype>

namespace headroom {

namespace {

/// Escapes that stand for one literal character (\. \( \[ \/ ...).
bool is_escaped_literal(char c) {
  return std::ispunct(static_cast<unsigned char>(c)) != 0 || c == ' ';
}

bool is_quantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

/// Whether a quantifier at `text[at]` allows zero repetitions of the atom before it.
bool allows_zero(std::string_view text, std::size_t at) {
  if (at >= text.size()) return false;
  if (text[at] == '*' || text[at] == '?') return true;
  if (text[at] == '{') return at + 1 < text.size() && text[at + 1] == '0';
  return false;
}

}  // namespace

std::string required_literal(std::string_view pattern) {
  // Flags such as (?i) change what a literal matches; do not guess.
  if (pattern.find("(?i") != std::string_view::npos) return {};
  // A top-level '|' means no single literal is required. Track depth to tell.
  int depth = 0;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') in_class = true;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == '|' && depth == 0) return {};
  }

  std::string best;
  std::string run;
  auto end_run = [&]() {
    if (run.size() > best.size()) best = run;
    run.clear();
  };
  depth = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '[') {  // a class: skip it whole ("[]x]" starts with a literal ']')
      std::size_t j = i + 1;
      if (j < pattern.size() && pattern[j] == '^') ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;
      while (j < pattern.size() && pattern[j] != ']')
        j += pattern[j] == '\\' ? std::size_t{2} : std::size_t{1};
      i = j;
      end_run();
      continue;
    }
    if (c == '(' || c == ')') {  // group content is optional or alternated: not required
      depth += c == '(' ? 1 : -1;
      end_run();
      continue;
    }
    if (depth > 0) {
      if (c == '\\') ++i;
      continue;
    }
    if (c == '.' || c == '^' || c == '$' || c == '|' || is_quantifier(c)) {
      if (c == '{') {
        while (i < pattern.size() && pattern[i] != '}') ++i;
      }
      end_run();
      continue;
    }
    char literal = c;
    std::size_t next = i + 1;
    if (c == '\\') {
      if (i + 1 >= pattern.size() || !is_escaped_literal(pattern[i + 1])) {
        ++i;  // \d, \s, \b, ...: a class or an assertion ends the run
        end_run();
        continue;
      }
      literal = pattern[i + 1];
      next = i + 2;
    }
    if (allows_zero(pattern, next)) {
      end_run();  // the atom may be absent
    } else if (next < pattern.size() && is_quantifier(pattern[next])) {
      run.push_back(literal);  // "+" or {n,}: at least one copy, but the run ends
      end_run();
    } else {
      run.push_back(literal);
    }
    i = next - 1;
  }
  end_run();
  return best;
}

}  // namespace headroom
