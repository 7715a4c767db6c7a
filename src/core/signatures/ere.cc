// Exporting the catalog as POSIX ERE for `grep -E -f`: the benchmark's peer
// tool scans with the same patterns. RE2-only syntax is rewritten to its ERE
// equivalent; what has none ((?:...) groups, \d, \s, \w, \b) is mapped to
// bracket expressions GNU grep understands. And its scan literals, for the benchmark
// of the matcher alone (bench/explain/floor.cc).

#include <string>

#include "core/signatures/analyzer.h"

namespace headroom {

namespace {

std::string to_ere(const std::string& pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '(' && i + 1 < pattern.size() && pattern[i + 1] == '?') {
      // (?P<name>  and  (?:  become a plain group.
      std::size_t j = i + 2;
      if (j < pattern.size() && pattern[j] == 'P') {
        j = pattern.find('>', j);
        if (j == std::string::npos) return out;
        i = j;
      } else {
        i = j;  // skip ':'
      }
      out.push_back('(');
      continue;
    }
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      switch (next) {
        case 'd':
          out += "[0-9]";
          break;
        case 'D':
          out += "[^0-9]";
          break;
        case 's':
          out += "[[:space:]]";
          break;
        case 'S':
          out += "[^[:space:]]";
          break;
        case 'w':
          out += "[[:alnum:]_]";
          break;
        case 'b':
          out += "\\b";
          break;
        default:
          out.push_back('\\');
          out.push_back(next);
      }
      continue;
    }
    if (c == '[') {  // inside a class, \d \w \s become POSIX classes
      std::size_t j = i + 1;
      const bool negated = j < pattern.size() && pattern[j] == '^';
      if (negated) ++j;
      // grep reads a line at a time, so \n never occurs in what it matches and is
      // dropped from a class. ']' must come first, '^' not first, '-' last; a
      // backslash is an ordinary character inside an ERE bracket expression.
      std::string inner;
      bool bracket = false;
      bool caret = false;
      bool dash = false;
      while (j < pattern.size() && pattern[j] != ']') {
        if (pattern[j] == '\\' && j + 1 < pattern.size()) {
          const char e = pattern[j + 1];
          if (e == 'd')
            inner += "0-9";
          else if (e == 'w')
            inner += "[:alnum:]_";
          else if (e == 's')
            inner += "[:space:]";
          else if (e == 't')
            inner.push_back('\t');
          else if (e == 'n' || e == 'r') {
          } else if (e == ']')
            bracket = true;
          else if (e == '^')
            caret = true;
          else if (e == '-')
            dash = true;
          else
            inner.push_back(e);
          j += 2;
          continue;
        }
        inner.push_back(pattern[j++]);
      }
      // An unescaped '-' that is not a range is literal too.
      std::string rest;
      for (std::size_t k = 0; k < inner.size(); ++k) {
        const bool range = inner[k] == '-' && k > 0 && k + 1 < inner.size() && inner[k - 1] != ':';
        if (inner[k] == '-' && !range) {
          dash = true;
        } else {
          rest.push_back(inner[k]);
        }
      }
      if (rest.empty() && !bracket && !caret && !dash) {
        // Only newlines: [^\n] is any character of a line, [\n] none.
        out += negated ? "." : "($.)";  // "$" then a character never matches
      } else {
        out.push_back('[');
        if (negated) out.push_back('^');
        if (bracket) out.push_back(']');
        out.append(rest);
        if (caret) out.push_back('^');
        if (dash) out.push_back('-');
        out.push_back(']');
      }
      i = j;
      continue;
    }
    if ((c == '?' || c == '+' || c == '*') && !out.empty() && i > 0 &&
        (pattern[i - 1] == '*' || pattern[i - 1] == '+' || pattern[i - 1] == '?' ||
         pattern[i - 1] == '}')) {
      continue;  // lazy quantifiers do not exist in ERE; the match set is the same
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string patterns_as_ere(const Catalog& catalog) {
  std::string out;
  for (const Signature& signature : catalog.signatures) {
    for (const std::string& pattern : signature.patterns) {
      out += to_ere(pattern);
      out.push_back('\n');
    }
  }
  return out;
}

std::string literals_as_lines(const Catalog& catalog) {
  std::string out;
  const LiteralScanner scanner = LogAnalyzer(catalog).literal_scanner();  // owns the literals
  for (const std::string& literal : scanner.literals()) {
    for (const char c : literal) {
      if (c == '\n') {
        out += "\\n";
      } else {
        if (c == '\\') out.push_back('\\');
        out.push_back(c);
      }
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace headroom
