// The streaming scan: carries partial lines between chunks, runs the literal
// prefilter over blocks of whole lines, and runs RE2 only on the lines where a
// literal was found. Line numbers come from counting '\n' (a tqdm bar redrawn
// with '\r' stays one line, as in an editor).

#include "core/signatures/analyzer.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>

#include "core/signatures/envelope.h"
#include "core/signatures/normalize.h"
#include "core/signatures/prefilter.h"
#include "core/signatures/reasoning.h"

namespace headroom {

namespace {

/// Bytes of one line that are analysed; the rest of a longer line is skipped.
constexpr std::size_t kMaxLine = 64 * 1024;
/// Previous lines kept for signatures that need context (requires_context).
constexpr std::size_t kTailLines = 64;
constexpr std::size_t kTailLineBytes = 4096;
constexpr std::size_t kEvidencePerSignature = 3;
constexpr std::size_t kMaxEvidence = 100;
constexpr std::size_t kMaxFieldValues = 32;
constexpr std::size_t kEvidenceTextBytes = 512;
/// Literals shorter than this would make the prefilter's stride tiny; such a
/// signature runs its patterns on every line instead.
constexpr std::size_t kMinLiteral = 6;

struct CompiledSignature {
  std::vector<std::unique_ptr<RE2>> patterns;
  std::unique_ptr<RE2> requires_context;
  std::unique_ptr<RE2> excludes_context;
};

template <typename T>
void add_bounded(std::vector<T>& values, T value) {
  if (values.size() >= kMaxFieldValues) return;
  if (std::find(values.begin(), values.end(), value) != values.end()) return;
  values.push_back(std::move(value));
}

template <typename T>
std::optional<T> to_number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

}  // namespace

class LogAnalyzer::Impl {
 public:
  explicit Impl(const Catalog& catalog) : catalog_(catalog) {
    std::vector<std::string> literals;
    for (std::size_t i = 0; i < catalog_.signatures.size(); ++i) {
      const Signature& signature = catalog_.signatures[i];
      CompiledSignature compiled;
      for (const std::string& pattern : signature.patterns) {
        compiled.patterns.push_back(std::make_unique<RE2>(pattern, RE2::Quiet));
      }
      if (!signature.requires_context.empty()) {
        compiled.requires_context = std::make_unique<RE2>(signature.requires_context, RE2::Quiet);
      }
      if (!signature.excludes_context.empty()) {
        compiled.excludes_context = std::make_unique<RE2>(signature.excludes_context, RE2::Quiet);
      }
      compiled_.push_back(std::move(compiled));
      const bool usable = !signature.literals.empty() &&
                          std::all_of(signature.literals.begin(), signature.literals.end(),
                                      [](const std::string& l) { return l.size() >= kMinLiteral; });
      if (!usable) {
        always_.push_back(i);
        continue;
      }
      for (const std::string& literal : signature.literals) {
        auto found = std::find(literals.begin(), literals.end(), literal);
        const auto index = static_cast<std::size_t>(found - literals.begin());
        if (found == literals.end()) {
          literals.push_back(literal);
          literal_signatures_.emplace_back();
        }
        auto& owners = literal_signatures_[index];
        if (std::find(owners.begin(), owners.end(), i) == owners.end()) owners.push_back(i);
      }
    }
    prefilter_ = LiteralPrefilter(std::move(literals));
    kept_.assign(catalog_.signatures.size(), 0);
    seen_on_line_.assign(catalog_.signatures.size(), 0);
  }

  void begin_source(std::string name) {
    end_source();
    source_ = std::move(name);
  }

  void feed(std::string_view bytes) {
    observations_.bytes += bytes.size();
    envelope_.decode(bytes, scan_);  // docker json-file and CRI records become plain lines
  }

  void scan(std::string_view bytes) {
    while (!bytes.empty()) {
      if (!carry_.empty() || skipping_) {
        const void* found = std::memchr(bytes.data(), '\n', bytes.size());
        if (found == nullptr) {
          append_carry(bytes);
          return;
        }
        const auto length =
            static_cast<std::size_t>(static_cast<const char*>(found) - bytes.data());
        append_carry(bytes.substr(0, length));
        carry_.push_back('\n');
        process_block(carry_);
        carry_.clear();
        skipping_ = false;
        bytes.remove_prefix(length + 1);
        continue;
      }
      const void* last = memrchr(bytes.data(), '\n', bytes.size());
      if (last == nullptr) {
        append_carry(bytes);
        return;
      }
      const auto length =
          static_cast<std::size_t>(static_cast<const char*>(last) - bytes.data()) + 1;
      process_block(bytes.substr(0, length));
      bytes.remove_prefix(length);
      append_carry(bytes);
      return;
    }
  }

  void end_source() {
    envelope_.finish(scan_);
    if (!carry_.empty() || skipping_) {
      carry_.push_back('\n');
      process_block(carry_);
      carry_.clear();
      skipping_ = false;
    }
    lines_before_source_ += line_base_;
    line_base_ = 0;
    tail_.clear();
  }

  Diagnosis finish() {
    end_source();
    return reason(catalog_, std::move(observations_));
  }

  Observations observations_;

 private:
  void append_carry(std::string_view bytes) {
    if (skipping_) return;
    const std::size_t room = kMaxLine - std::min(kMaxLine, carry_.size());
    carry_.append(bytes.substr(0, room));
    if (bytes.size() > room) skipping_ = true;  // the rest of this long line is not analysed
  }

  /// `block` holds whole lines, each ending in '\n'.
  void process_block(std::string_view block) {
    hits_.clear();
    prefilter_.scan(block, [&](std::size_t at, std::size_t literal) {
      hits_.push_back({at, literal});
    });
    if (!always_.empty()) {
      // Signatures without a usable literal look at every line.
      std::size_t start = 0;
      while (start < block.size()) {
        hits_.push_back({start, kAlways});
        const void* nl = std::memchr(block.data() + start, '\n', block.size() - start);
        start = static_cast<std::size_t>(static_cast<const char*>(nl) - block.data()) + 1;
      }
    }
    std::sort(hits_.begin(), hits_.end());
    std::size_t counted_at = 0;
    std::uint64_t counted_lines = 0;
    std::size_t i = 0;
    while (i < hits_.size()) {
      const std::size_t at = hits_[i].first;
      const void* before = at == 0 ? nullptr : memrchr(block.data(), '\n', at);
      const std::size_t line_start =
          before == nullptr
              ? 0
              : static_cast<std::size_t>(static_cast<const char*>(before) - block.data()) + 1;
      const std::size_t line_end = block.find('\n', at);
      counted_lines +=
          LiteralPrefilter::count_newlines(block.data() + counted_at, block.data() + line_start);
      counted_at = line_start;
      ++generation_;
      std::vector<std::size_t> signatures;
      for (; i < hits_.size() && hits_[i].first < line_end; ++i) {
        const std::size_t literal = hits_[i].second;
        const auto add = [&](std::size_t signature) {
          if (seen_on_line_[signature] == generation_) return;
          seen_on_line_[signature] = generation_;
          signatures.push_back(signature);
        };
        if (literal == kAlways) {
          for (std::size_t signature : always_) add(signature);
        } else {
          for (std::size_t signature : literal_signatures_[literal]) add(signature);
        }
      }
      std::sort(signatures.begin(), signatures.end());
      process_line(block, line_start, line_end, at - line_start, signatures,
                   line_base_ + counted_lines + 1);
    }
    line_base_ += LiteralPrefilter::count_newlines(block.data(), block.data() + block.size());
    observations_.lines = lines_before_source_ + line_base_;
    remember_tail(block);
  }

  void process_line(std::string_view block, std::size_t start, std::size_t end, std::size_t offset,
                    const std::vector<std::size_t>& signatures, std::uint64_t line_number) {
    std::string_view raw = block.substr(start, end - start);
    if (raw.size() > kMaxLine) {  // a long line: look at a window around the hit
      const std::size_t from = offset > kMaxLine / 2 ? offset - kMaxLine / 2 : 0;
      raw = raw.substr(from, kMaxLine);
      offset -= from;
    }
    const std::string text = normalize_line(raw, offset);
    for (std::size_t signature : signatures) match(signature, text, block, start, line_number);
  }

  void match(std::size_t index, const std::string& text, std::string_view block,
             std::size_t line_start, std::uint64_t line_number) {
    const CompiledSignature& compiled = compiled_[index];
    const RE2* matched = nullptr;
    std::vector<std::string> values;
    for (const auto& pattern : compiled.patterns) {
      const int groups = pattern->NumberOfCapturingGroups();
      values.assign(static_cast<std::size_t>(groups), std::string());
      std::vector<RE2::Arg> args(values.size());
      std::vector<const RE2::Arg*> pointers(values.size());
      for (std::size_t g = 0; g < values.size(); ++g) {
        args[g] = RE2::Arg(&values[g]);
        pointers[g] = &args[g];
      }
      if (RE2::PartialMatchN(text, *pattern, pointers.data(), groups)) {
        matched = pattern.get();
        break;
      }
    }
    if (matched == nullptr) return;
    const Signature& signature = catalog_.signatures[index];
    if (compiled.requires_context || compiled.excludes_context) {
      const std::vector<std::string> context =
          previous_lines(block, line_start, signature.context_lines);
      const auto any = [&](const RE2& re) {
        if (RE2::PartialMatch(text, re)) return true;
        return std::any_of(context.begin(), context.end(),
                           [&](const std::string& line) { return RE2::PartialMatch(line, re); });
      };
      if (compiled.requires_context && !any(*compiled.requires_context)) return;
      if (compiled.excludes_context && any(*compiled.excludes_context)) return;
    }
    record(index, text, *matched, values, line_number);
  }

  void record(std::size_t index, const std::string& text, const RE2& pattern,
              const std::vector<std::string>& values, std::uint64_t line_number) {
    const Signature& signature = catalog_.signatures[index];
    const std::string reference = source_.empty() ? fmt::format("line {}", line_number)
                                                  : fmt::format("{}:{}", source_, line_number);
    ExtractedFields& fields = observations_.fields;
    std::vector<std::int64_t> pids;
    std::string signal;
    std::string path;
    for (const auto& [group, name] : pattern.CapturingGroupNames()) {
      const std::string& value = values[static_cast<std::size_t>(group - 1)];
      if (value.empty()) continue;
      if (name == "pid" || name == "pids") {
        // "pid(s) 123, 456" lists several.
        std::size_t at = 0;
        while (at < value.size()) {
          const std::size_t next = value.find_first_of(", ", at);
          const std::string_view piece = std::string_view(value).substr(
              at, next == std::string::npos ? std::string::npos : next - at);
          if (auto pid = to_number<std::int64_t>(piece)) {
            pids.push_back(*pid);
            add_bounded(fields.pids, *pid);
          }
          if (next == std::string::npos) break;
          at = next + 1;
        }
      } else if (name == "killed_pid") {
        if (auto pid = to_number<std::int64_t>(value)) {
          add_bounded(fields.killed_pids, *pid);
          if (observations_.killed_pids.size() < kMaxFieldValues)
            observations_.killed_pids.emplace_back(*pid, reference);
        }
      } else if (name == "path") {
        path = value;
        add_bounded(fields.paths, value);
      } else if (name == "size") {
        if (auto size = to_number<std::uint64_t>(value)) add_bounded(fields.sizes, *size);
      } else if (name == "signal") {
        signal = value;
        add_bounded(fields.signals, value);
      } else if (name == "errno") {
        if (auto number = to_number<int>(value)) add_bounded(fields.errnos, *number);
      } else if (name == "exit_code") {
        if (auto number = to_number<int>(value)) add_bounded(fields.exit_codes, *number);
      }
    }
    if (!signal.empty()) {
      for (std::int64_t pid : pids) {
        if (observations_.signalled_pids.size() < kMaxFieldValues)
          observations_.signalled_pids.emplace_back(pid, signal);
      }
    }
    const std::string cause = signature.cause_by_path && !path.empty()
                                  ? cause_for_path(path, signature.cause)
                                  : signature.cause;
    HitSummary& hit = observations_.hits[{index, cause}];
    if (hit.count == 0) {
      hit.first_order = ++order_;
      hit.first_reference = reference;
    }
    ++hit.count;
    if (kept_[index] < kEvidencePerSignature && observations_.evidence.size() < kMaxEvidence) {
      ++kept_[index];
      observations_.evidence.push_back(EvidenceLine{
          source_, line_number, printable_utf8(text, kEvidenceTextBytes), signature.id, cause});
    }
  }

  /// Appends up to `count` normalised lines of `block` that end before `end`, nearest first.
  static void lines_before(std::string_view block, std::size_t end, std::size_t count,
                           std::vector<std::string>& lines) {
    const std::size_t limit = lines.size() + count;
    while (lines.size() < limit && end > 0) {
      const std::size_t stop = end - 1;  // the '\n' that ends the line
      const void* before = stop == 0 ? nullptr : memrchr(block.data(), '\n', stop);
      const std::size_t begin =
          before == nullptr
              ? 0
              : static_cast<std::size_t>(static_cast<const char*>(before) - block.data()) + 1;
      lines.push_back(
          normalize_line(block.substr(begin, std::min(stop - begin, kTailLineBytes)), 0));
      end = begin;
    }
  }

  /// Up to `count` lines before `line_start`, nearest first, from the block and the saved tail.
  std::vector<std::string> previous_lines(std::string_view block, std::size_t line_start,
                                          std::size_t count) const {
    std::vector<std::string> lines;
    lines_before(block, line_start, count, lines);
    for (auto it = tail_.rbegin(); it != tail_.rend() && lines.size() < count; ++it)
      lines.push_back(*it);
    return lines;
  }

  void remember_tail(std::string_view block) {
    std::vector<std::string> newest;
    lines_before(block, block.size(), kTailLines, newest);
    for (auto it = newest.rbegin(); it != newest.rend(); ++it) {
      tail_.push_back(std::move(*it));
      if (tail_.size() > kTailLines) tail_.pop_front();
    }
  }

  static constexpr std::size_t kAlways = ~std::size_t{0};

  Catalog catalog_;
  std::vector<CompiledSignature> compiled_;
  LiteralPrefilter prefilter_;
  std::vector<std::vector<std::size_t>> literal_signatures_;
  std::vector<std::size_t> always_;
  std::vector<std::size_t> kept_;
  std::vector<std::uint64_t> seen_on_line_;
  std::uint64_t generation_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> hits_;

  std::string source_;
  EnvelopeDecoder envelope_;
  const EnvelopeDecoder::Sink scan_ = [this](std::string_view bytes) { scan(bytes); };
  std::string carry_;
  bool skipping_ = false;
  std::uint64_t line_base_ = 0;
  std::uint64_t lines_before_source_ = 0;
  std::deque<std::string> tail_;
  std::uint64_t order_ = 0;
};

LogAnalyzer::LogAnalyzer(const Catalog& catalog) : impl_(std::make_unique<Impl>(catalog)) {}
LogAnalyzer::~LogAnalyzer() = default;

void LogAnalyzer::begin_source(std::string name) { impl_->begin_source(std::move(name)); }
void LogAnalyzer::feed(std::string_view bytes) { impl_->feed(bytes); }
void LogAnalyzer::note_exit(std::optional<int> exit_code, std::optional<int> signal) {
  impl_->observations_.exit_code = exit_code;
  impl_->observations_.signal = signal;
}
Diagnosis LogAnalyzer::finish() { return impl_->finish(); }

}  // namespace headroom
