// The streaming scan: carries partial lines between chunks, runs the literal
// prefilter over blocks of whole lines, and runs RE2 only on the lines where a
// literal was found. Line numbers come from counting '\n' (a tqdm bar redrawn
// with '\r' stays one line, as in an editor).
//
// Three things make it read pasted logs as well as written ones:
// - Wrapped lines. Pastes are hard-wrapped mid-phrase ("Too" / "many open files"),
//   so in the first kPasteBytes of each source every pair of adjacent lines is also
//   matched joined (with and without a space); a match counts there only when it
//   crosses the break and matched neither line alone.
// - Located errors. "No space left on device" says that space ran out, not where: a
//   signature with `locate` takes its place from the path it names, else from the
//   location hints ([[location]]: paths under /tmp or /dev/shm, tempfile.py,
//   SemLock, Ray's spilling...) on its line, in the kBefore lines before it (its
//   traceback) or the kAfter lines after it, nearest first. An error whose place was
//   inferred counts as strong at most: only a named place is decisive.
// - Kill reports. A `by_signal` signature takes its cause from the signal the
//   reporter names, in whatever spelling it uses (signals.h).

#include "core/signatures/analyzer.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "core/signatures/envelope.h"
#include "core/signatures/literal_scanner.h"
#include "core/signatures/normalize.h"
#include "core/signatures/prefilter.h"
#include "core/signatures/reasoning.h"
#include "core/signatures/signals.h"

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
/// The head of each source in which adjacent lines are also matched joined: a paste
/// is small; a log a program wrote is not wrapped, and its size must not slow the scan.
constexpr std::size_t kPasteBytes = 1024 * 1024;
/// Bytes of each side of a line break that a joined match looks at.
constexpr std::size_t kJoinBytes = 512;
/// Lines before and after a located error in which location hints count.
constexpr std::uint64_t kBefore = 40;
constexpr std::uint64_t kAfter = 16;
static_assert(kBefore < kTailLines, "the two-stage scan keeps whole the lines errors look back on");
constexpr std::size_t kMaxMarks = 256;
constexpr std::size_t kMaxPending = 64;

/// The values of a match's named groups: (group name, value), empty values dropped.
using NamedValues = std::vector<std::pair<std::string, std::string>>;

/// A location hint seen on a line of the current source.
struct Mark {
  std::uint64_t line = 0;
  std::string where;
};

/// A match still waiting for the lines after it: a located error for a hint, or a match
/// that a marker below it would cancel (`cancel_on`, the marker's mark).
struct Pending {
  std::size_t index = 0;
  std::string text;
  NamedValues values;
  std::uint64_t line = 0;
  std::string cancel_on;
};

/// Marks of markers are kept beside location marks, under "@" + the marker's name.
std::string marker_mark(std::string_view name) { return "@" + std::string(name); }

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

/// The catalog compiled once: the literal database, which signatures each literal starts,
/// the signal meanings, and each signature's RE2 programs once it is needed. Analyzers on
/// any threads share it (the programs are compiled under std::call_once and RE2 is safe for
/// concurrent use; each analyzer copies the literal scanner for its own scratch space).
struct CompiledCatalog {
  explicit CompiledCatalog(const Catalog& source) : catalog(source) {
    std::vector<std::string> literals;
    for (std::size_t i = 0; i < catalog.signatures.size(); ++i) {
      const Signature& signature = catalog.signatures[i];
      if (!signature.signals.empty()) {  // a signal's meaning: nothing to match
        for (int number : signature.signals) meanings.emplace(number, i);
        continue;
      }
      if (signature.paste_only) {
        paste_always.push_back(i);
        continue;
      }
      const bool usable = !signature.literals.empty() &&
                          std::all_of(signature.literals.begin(), signature.literals.end(),
                                      [](const std::string& l) { return l.size() >= kMinLiteral; });
      if (!usable) {
        always.push_back(i);
        continue;
      }
      for (const std::string& literal : signature.literals) {
        auto found = std::find(literals.begin(), literals.end(), literal);
        const auto index = static_cast<std::size_t>(found - literals.begin());
        if (found == literals.end()) {
          literals.push_back(literal);
          literal_signatures.emplace_back();
        }
        auto& owners = literal_signatures[index];
        if (std::find(owners.begin(), owners.end(), i) == owners.end()) owners.push_back(i);
      }
    }
    scanner = LiteralScanner(std::move(literals), stages());
  }

  /// The literal scan in two stages (literal_scanner.h). Location hints and markers only
  /// count near a match that reads marks: a located error looks up to kBefore lines back for a
  /// hint and waits up to kAfter lines for one below it; a match that a marker would cancel
  /// waits for it. So the first stage looks for every literal but those that only hints and
  /// markers have (117 of the built-in 625, 58 of them shorter than 8 bytes: /tmp paths,
  /// machinery names; without them Hyperscan runs a fifth fewer instructions a byte). Every
  /// line is scanned from kTailLines lines above a literal of a signature that reads marks,
  /// and the last kTailLines lines of every block (the next block's errors look back into
  /// them); a block read while a match waits for the lines below it, or in the head of a
  /// source, is scanned again whole (process_scanned). The lines left out can then hold only
  /// hints and markers that nothing reads: the marks an error sees, and those added after
  /// them (which may push them out of the bounded list), are the same.
  [[nodiscard]] LiteralScanner::Stages stages() const {
    LiteralScanner::Stages stages;
    if (!always.empty()) return stages;  // signatures tried on every line: one stage
    for (std::size_t literal = 0; literal < literal_signatures.size(); ++literal) {
      bool needed = false;
      bool whole = false;
      for (std::size_t index : literal_signatures[literal]) {
        const Signature& signature = catalog.signatures[index];
        const bool reads_marks = signature.locate || !signature.unless_followed_by.empty();
        const bool hint = !signature.where.empty() || !signature.marker.empty();
        needed = needed || reads_marks || !hint;
        whole = whole || reads_marks;
      }
      if (needed) stages.first.push_back(literal);
      if (whole) stages.whole.push_back(literal);
    }
    stages.tail_lines = kTailLines;
    return stages;
  }

  /// Signature `index`'s RE2 programs, compiled when first asked for: a log matches few
  /// signatures, and compiling all of them up front costs tens of milliseconds.
  [[nodiscard]] const CompiledSignature& compiled(std::size_t index) const {
    Lazy& lazy = lazy_[index];
    std::call_once(lazy.once, [&] {
      const Signature& signature = catalog.signatures[index];
      for (const std::string& pattern : signature.patterns)
        lazy.compiled.patterns.push_back(std::make_unique<RE2>(pattern, RE2::Quiet));
      if (!signature.requires_context.empty())
        lazy.compiled.requires_context =
            std::make_unique<RE2>(signature.requires_context, RE2::Quiet);
      if (!signature.excludes_context.empty())
        lazy.compiled.excludes_context =
            std::make_unique<RE2>(signature.excludes_context, RE2::Quiet);
    });
    return lazy.compiled;
  }

  Catalog catalog;
  LiteralScanner scanner;
  std::vector<std::vector<std::size_t>> literal_signatures;
  std::vector<std::size_t> always;
  std::vector<std::size_t> paste_always;  ///< paste_only signatures: every line of the head
  std::map<int, std::size_t> meanings;    ///< signal number -> its [[signal]] entry

 private:
  struct Lazy {
    std::once_flag once;
    CompiledSignature compiled;
  };
  std::unique_ptr<Lazy[]> lazy_ = std::make_unique<Lazy[]>(catalog.signatures.size());
};

class LogAnalyzer::Impl {
 public:
  explicit Impl(std::shared_ptr<const CompiledCatalog> shared)
      : shared_(std::move(shared)),
        catalog_(shared_->catalog),
        scanner_(shared_->scanner),
        literal_signatures_(shared_->literal_signatures),
        always_(shared_->always),
        paste_always_(shared_->paste_always),
        meanings_(shared_->meanings) {
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

  [[nodiscard]] bool passes_through() const { return envelope_.passes_through(); }

  /// scan(bytes) with the literal scan of `bytes` made already: the carry is completed and
  /// scanned here, the whole lines after it take `scan`'s hits that lie wholly inside them.
  void feed_scanned(std::string_view bytes, BlockScan& scan) {
    observations_.bytes += bytes.size();
    std::size_t start = 0;
    std::uint64_t head_lines = 0;
    if (!carry_.empty() || skipping_) {
      const void* found = std::memchr(bytes.data(), '\n', bytes.size());
      if (found == nullptr) {
        append_carry(bytes);
        return;
      }
      const auto length = static_cast<std::size_t>(static_cast<const char*>(found) - bytes.data());
      append_carry(bytes.substr(0, length));
      carry_.push_back('\n');
      process_block(carry_);
      carry_.clear();
      skipping_ = false;
      start = length + 1;
      head_lines = 1;
    }
    const void* last = memrchr(bytes.data() + start, '\n', bytes.size() - start);
    if (last == nullptr) {
      append_carry(bytes.substr(start));
      return;
    }
    const auto end = static_cast<std::size_t>(static_cast<const char*>(last) - bytes.data()) + 1;
    std::size_t kept = 0;
    for (const LiteralHit& hit : scan.hits) {
      if (hit.at < start || hit.at + scanner_.hit_size(hit.literal) > end) continue;
      scan.hits[kept++] = LiteralHit{hit.at - start, hit.literal, hit.newlines - head_lines};
    }
    scan.hits.resize(kept);
    scan.newlines -= head_lines;  // the rest after the last '\n' has none
    scan.tail = scan.tail > start ? scan.tail - start : 0;
    process_scanned(bytes.substr(start, end - start), scan);
    append_carry(bytes.substr(end));
  }

  [[nodiscard]] LiteralScanner literal_scanner() const { return scanner_; }

  void end_source() {
    envelope_.finish(scan_);
    if (!carry_.empty() || skipping_) {
      carry_.push_back('\n');
      process_block(carry_);
      carry_.clear();
      skipping_ = false;
    }
    expire_pending(~std::uint64_t{0} - kAfter - 1);
    lines_before_source_ += line_base_;
    line_base_ = 0;
    source_bytes_ = 0;
    tail_.clear();
    marks_.clear();
    prev_text_.clear();
    matched_prev_.clear();
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
    scanner_.scan_block(block, block_scan_, /*all_lines=*/true);
    process_scanned(block, block_scan_);
  }

  /// `block` holds whole lines, each ending in '\n'; `scan` is what the literal scanner found
  /// in it (hits_ takes its hits).
  void process_scanned(std::string_view block, BlockScan& scan) {
    // A two-stage scan left out lines that only hints and markers can be found on: they count
    // in the head of a source (every line is read there) and below a match that waits.
    if (!scan.complete && (source_bytes_ < kPasteBytes || !pending_.empty()))
      scanner_.scan_block(block, scan, /*all_lines=*/true);
    hits_.swap(scan.hits);
    const std::uint64_t block_lines = scan.newlines;
    if (!always_.empty()) {
      // Signatures without a usable literal look at every line.
      std::size_t start = 0;
      std::uint64_t line = 0;
      while (start < block.size()) {
        hits_.push_back({start, kAlways, line++});
        const void* nl = std::memchr(block.data() + start, '\n', block.size() - start);
        start = static_cast<std::size_t>(static_cast<const char*>(nl) - block.data()) + 1;
      }
      std::sort(hits_.begin(), hits_.end());
    }
    std::size_t counted_at = 0;
    std::uint64_t counted_lines = 0;
    std::size_t i = 0;
    std::vector<std::size_t> signatures;
    // The head of a source: every line, so that wrapped messages are seen joined.
    while (counted_at < block.size() && source_bytes_ + counted_at < kPasteBytes) {
      const std::size_t line_end = block.find('\n', counted_at);
      std::size_t offset = std::string_view::npos;
      collect(i, line_end, signatures, offset);
      if (!paste_always_.empty()) {
        for (std::size_t signature : paste_always_) add_once(signature, signatures);
        std::sort(signatures.begin(), signatures.end());
      }
      process_line(block, counted_at, line_end,
                   offset == std::string_view::npos ? line_end - counted_at : offset - counted_at,
                   signatures, line_base_ + counted_lines + 1, /*paste=*/true);
      ++counted_lines;
      counted_at = line_end + 1;
    }
    while (i < hits_.size()) {
      const std::size_t at = hits_[i].at;
      if (at < counted_at) {  // a hit on a line the head already read
        ++i;
        continue;
      }
      const void* before = at == 0 ? nullptr : memrchr(block.data(), '\n', at);
      const std::size_t line_start =
          before == nullptr
              ? 0
              : static_cast<std::size_t>(static_cast<const char*>(before) - block.data()) + 1;
      const std::size_t line_end = block.find('\n', at);
      const std::uint64_t line_number = line_base_ + hits_[i].newlines + 1;
      counted_at = line_start;
      std::size_t offset = line_start;
      collect(i, line_end, signatures, offset);
      process_line(block, line_start, line_end, offset - line_start, signatures, line_number,
                   /*paste=*/false);
    }
    line_base_ += block_lines;
    source_bytes_ += block.size();
    observations_.lines = lines_before_source_ + line_base_;
    expire_pending(line_base_);
    remember_tail(block);
    hits_.swap(scan.hits);  // give the capacity back
  }

  /// The signatures whose literals hits_[i...] found up to `line_end` (the '\n' that ends the
  /// line belongs to it: every hit is then on some line, and the scan moves on), in catalog order;
  /// `offset` becomes the first hit's position (unchanged when there is none).
  void collect(std::size_t& i, std::size_t line_end, std::vector<std::size_t>& signatures,
               std::size_t& offset) {
    ++generation_;
    signatures.clear();
    bool placed = false;
    for (; i < hits_.size() && hits_[i].at <= line_end; ++i) {
      const std::size_t literal = hits_[i].literal;
      // The first literal found places the line's '\r' segment; a line-wide hit does not.
      if (!placed && literal != kAlways) {
        offset = hits_[i].at;
        placed = true;
      }
      if (literal == kAlways) {
        for (std::size_t signature : always_) add_once(signature, signatures);
      } else {
        for (std::size_t signature : literal_signatures_[literal]) add_once(signature, signatures);
      }
    }
    std::sort(signatures.begin(), signatures.end());
  }

  void add_once(std::size_t signature, std::vector<std::size_t>& signatures) {
    if (seen_on_line_[signature] == generation_) return;
    seen_on_line_[signature] = generation_;
    signatures.push_back(signature);
  }

  void process_line(std::string_view block, std::size_t start, std::size_t end, std::size_t offset,
                    const std::vector<std::size_t>& signatures, std::uint64_t line_number,
                    bool paste) {
    std::string_view raw = block.substr(start, end - start);
    if (raw.size() > kMaxLine) {  // a long line: look at a window around the hit
      const std::size_t from = offset > kMaxLine / 2 ? offset - kMaxLine / 2 : 0;
      raw = raw.substr(from, kMaxLine);
      offset -= from;
    }
    const std::string text = normalize_line(raw, offset);
    matched_now_.clear();
    analyse(text, signatures, line_number, block, start, nullptr);
    if (!paste) return;
    // A message wrapped onto this line: the previous line's end joined to this line's start.
    const bool redrawn = raw.find('\r') != std::string_view::npos;
    std::string head = redrawn ? normalize_line(raw, 0) : text;
    const std::size_t indent = head.find_first_not_of(" \t");
    if (indent == std::string::npos) head.clear();
    if (!prev_text_.empty() && !head.empty()) {
      head.erase(0, indent);
      if (head.size() > kJoinBytes) head.resize(kJoinBytes);
      join(head, line_number - 1, block, start);
    }
    prev_text_ = redrawn ? normalize_line(raw, raw.size()) : text;
    if (prev_text_.size() > kJoinBytes) prev_text_.erase(0, prev_text_.size() - kJoinBytes);
    matched_prev_.swap(matched_now_);
  }

  /// Matches prev_text_ + (" " or "") + `head`, for messages split by a line break.
  void join(const std::string& head, std::uint64_t line_number, std::string_view block,
            std::size_t line_start) {
    std::vector<std::size_t> joined_matches;
    for (const char* separator : {" ", ""}) {
      std::string joined = prev_text_;
      const std::size_t break_begin = joined.size();
      joined += separator;
      const std::size_t break_end = joined.size();
      joined += head;
      ++generation_;
      std::vector<std::size_t> signatures;
      scanner_.scan(joined, [&](std::size_t, std::size_t literal) {
        for (std::size_t signature : literal_signatures_[literal]) add_once(signature, signatures);
      });
      for (std::size_t signature : always_) add_once(signature, signatures);
      std::sort(signatures.begin(), signatures.end());
      std::erase_if(signatures, [&](std::size_t signature) {
        const auto in = [&](const std::vector<std::size_t>& list) {
          return std::find(list.begin(), list.end(), signature) != list.end();
        };
        return in(matched_prev_) || in(matched_now_) || in(joined_matches);
      });
      if (signatures.empty()) continue;
      const std::pair<std::size_t, std::size_t> junction{break_begin, break_end};
      const std::vector<std::size_t> found =
          analyse(joined, signatures, line_number, block, line_start, &junction);
      joined_matches.insert(joined_matches.end(), found.begin(), found.end());
    }
  }

  /// Runs `signatures` on `text` (a line, or two joined at `junction`: then a match must
  /// span the break). Location hints become marks; errors are concluded. Returns the
  /// signatures that matched.
  std::vector<std::size_t> analyse(const std::string& text,
                                   const std::vector<std::size_t>& signatures,
                                   std::uint64_t line_number, std::string_view block,
                                   std::size_t line_start,
                                   const std::pair<std::size_t, std::size_t>* junction) {
    std::vector<std::size_t> matched;
    std::vector<std::pair<std::size_t, NamedValues>> errors;
    for (std::size_t index : signatures) {
      NamedValues values;
      std::size_t begin = 0;
      std::size_t end = 0;
      if (!run_patterns(index, text, values, begin, end)) continue;
      if (junction != nullptr && (begin >= junction->first || end <= junction->second)) continue;
      if (!context_allows(index, text, block, line_start)) continue;
      matched.push_back(index);
      if (junction == nullptr) matched_now_.push_back(index);
      const Signature& signature = catalog_.signatures[index];
      if (!signature.where.empty() || !signature.marker.empty()) {
        add_mark(line_number,
                 signature.marker.empty() ? signature.where : marker_mark(signature.marker));
        continue;
      }
      errors.emplace_back(index, std::move(values));
    }
    for (auto& [index, values] : errors) conclude(index, text, std::move(values), line_number);
    return matched;
  }

  /// The first pattern of signature `index` that matches `text`: its named groups and span.
  bool run_patterns(std::size_t index, const std::string& text, NamedValues& values,
                    std::size_t& begin, std::size_t& end) const {
    for (const auto& pattern : shared_->compiled(index).patterns) {
      const int groups = pattern->NumberOfCapturingGroups();
      std::vector<re2::StringPiece> parts(static_cast<std::size_t>(groups) + 1);
      if (!pattern->Match(text, 0, text.size(), RE2::UNANCHORED, parts.data(), groups + 1))
        continue;
      begin = static_cast<std::size_t>(parts[0].data() - text.data());
      end = begin + parts[0].size();
      for (const auto& [group, name] : pattern->CapturingGroupNames()) {
        const re2::StringPiece& value = parts[static_cast<std::size_t>(group)];
        if (!value.empty()) values.emplace_back(name, std::string(value.data(), value.size()));
      }
      return true;
    }
    return false;
  }

  bool context_allows(std::size_t index, const std::string& text, std::string_view block,
                      std::size_t line_start) const {
    const CompiledSignature& compiled = shared_->compiled(index);
    if (!compiled.requires_context && !compiled.excludes_context) return true;
    const std::vector<std::string> context =
        previous_lines(block, line_start, catalog_.signatures[index].context_lines);
    const auto any = [&](const RE2& re) {
      if (RE2::PartialMatch(text, re)) return true;
      return std::any_of(context.begin(), context.end(),
                         [&](const std::string& line) { return RE2::PartialMatch(line, re); });
    };
    if (compiled.requires_context && !any(*compiled.requires_context)) return false;
    return !(compiled.excludes_context && any(*compiled.excludes_context));
  }

  /// Decides a matched error's cause: by the signal it reports, by where it happened, or
  /// the signature's own.
  void conclude(std::size_t index, const std::string& text, NamedValues values,
                std::uint64_t line_number) {
    const Signature& signature = catalog_.signatures[index];
    if (!signature.unless_followed_by.empty()) {
      wait(Pending{index, text, std::move(values), line_number,
                   marker_mark(signature.unless_followed_by)});
      return;
    }
    decide(index, text, std::move(values), line_number);
  }

  void wait(Pending pending) {
    if (pending_.size() >= kMaxPending) {
      settle(pending_.front(), "disk", {});
      pending_.erase(pending_.begin());
    }
    pending_.push_back(std::move(pending));
  }

  void decide(std::size_t index, const std::string& text, NamedValues values,
              std::uint64_t line_number) {
    const Signature& signature = catalog_.signatures[index];
    if (signature.by_signal) {
      const std::optional<int> signal = reported_signal(values);
      if (!signal) return;  // an ordinary exit status: nothing to say
      const auto meaning = meanings_.find(*signal);
      if (meaning == meanings_.end()) return;
      const Signature& means = catalog_.signatures[meaning->second];
      record(index, text, values, line_number, means.cause,
             std::max(signature.strength, means.strength), {}, meaning->second);
      return;
    }
    if (!signature.locate) {
      record(index, text, values, line_number, signature.cause, signature.strength, {});
      return;
    }
    for (const auto& [name, value] : values) {
      if (name == "path") {
        locate(index, text, values, line_number, location_for_path(value),
               fmt::format("it names {}", value), true);
        return;
      }
    }
    // The nearest hint on this line or before it (its traceback), else wait for one after it.
    for (auto it = marks_.rbegin(); it != marks_.rend(); ++it) {
      if (it->line > line_number || it->where.starts_with('@')) continue;
      if (it->line + kBefore < line_number) break;
      const bool same_line = it->line == line_number;
      locate(
          index, text, values, line_number, it->where,
          same_line ? "the line says where" : fmt::format("line {} above it says where", it->line),
          same_line);
      return;
    }
    wait(Pending{index, text, std::move(values), line_number, {}});
  }

  static std::optional<int> reported_signal(const NamedValues& values) {
    for (const auto& [name, value] : values) {
      if (name == "signal") {
        if (std::optional<int> number = signal_number(value)) return number;
      } else if (name == "exit_code") {
        if (std::optional<int> status = to_number<int>(value)) {
          if (*status < 0) return -*status;  // Python's returncode -N
          if (std::optional<int> number = signal_from_status(*status)) return number;
        }
      }
    }
    return std::nullopt;
  }

  void add_mark(std::uint64_t line_number, const std::string& where) {
    if (!marks_.empty() && marks_.back().line == line_number && marks_.back().where == where)
      return;
    marks_.push_back(Mark{line_number, where});
    if (marks_.size() > kMaxMarks) marks_.pop_front();
    // Errors just above that were waiting for a place.
    std::vector<Pending> waiting;
    waiting.swap(pending_);
    for (Pending& pending : waiting) {
      const bool below = pending.line < line_number && line_number <= pending.line + kAfter;
      if (below && !pending.cancel_on.empty() && pending.cancel_on == where) continue;  // dropped
      if (below && pending.cancel_on.empty() && !where.starts_with('@')) {
        settle(pending, where, fmt::format("line {} below it says where", line_number));
      } else {
        pending_.push_back(std::move(pending));
      }
    }
  }

  /// Located errors that no hint followed within kAfter lines: the disk, unnamed.
  void expire_pending(std::uint64_t lines_read) {
    std::vector<Pending> waiting;
    waiting.swap(pending_);
    for (Pending& pending : waiting) {
      if (pending.line + kAfter < lines_read + 1) {
        settle(pending, "disk", {});
      } else {
        pending_.push_back(std::move(pending));
      }
    }
  }

  /// A pending match whose lines below are read: a conditional one counts as it is, a
  /// located one at `where`.
  void settle(Pending& pending, std::string_view where, std::string how) {
    if (!pending.cancel_on.empty()) {
      decide(pending.index, pending.text, std::move(pending.values), pending.line);
      return;
    }
    locate(pending.index, pending.text, pending.values, pending.line, where, std::move(how), false);
  }

  /// Records a located error at `where`; `named` when the line itself says where, else it
  /// counts as strong at most.
  void locate(std::size_t index, const std::string& text, const NamedValues& values,
              std::uint64_t line_number, std::string_view where, std::string how, bool named) {
    const Signature& signature = catalog_.signatures[index];
    std::string cause = signature.cause;
    if (const auto found = signature.by_location.find(where);
        found != signature.by_location.end()) {
      cause = found->second;
    } else {
      for (const auto& [location, default_cause] : kDefaultLocationCauses) {
        if (location == where) cause = default_cause;
      }
    }
    if (cause.empty() || cause == "none") return;
    const Strength strength =
        named ? signature.strength : std::max(signature.strength, Strength::kStrong);
    if (how.empty())
      how = "nothing near it says where: not the temp dir or /dev/shm, as far as the log shows";
    record(index, text, values, line_number, cause, strength, std::move(how));
  }

  void record(std::size_t index, const std::string& text, const NamedValues& values,
              std::uint64_t line_number, const std::string& cause, Strength strength,
              std::string how, std::optional<std::size_t> meaning = std::nullopt) {
    const std::string reference = source_.empty() ? fmt::format("line {}", line_number)
                                                  : fmt::format("{}:{}", source_, line_number);
    ExtractedFields& fields = observations_.fields;
    std::vector<std::int64_t> pids;
    std::string signal;
    bool sigkill = false;
    for (const auto& [name, value] : values) {
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
        add_bounded(fields.paths, value);
      } else if (name == "size") {
        if (auto size = to_number<std::uint64_t>(value)) add_bounded(fields.sizes, *size);
      } else if (name == "signal") {
        signal = value;
        add_bounded(fields.signals, value);
        sigkill = sigkill || signal_number(value) == 9;
      } else if (name == "errno") {
        if (auto number = to_number<int>(value)) add_bounded(fields.errnos, *number);
      } else if (name == "exit_code") {
        if (auto number = to_number<int>(value)) {
          add_bounded(fields.exit_codes, *number);
          sigkill = sigkill || *number == -9 || signal_from_status(*number) == 9;
        }
      }
    }
    if (!signal.empty()) {
      for (std::int64_t pid : pids) {
        if (observations_.signalled_pids.size() < kMaxFieldValues)
          observations_.signalled_pids.emplace_back(pid, signal);
      }
    }
    HitSummary& hit = observations_.hits[{index, cause}];
    if (hit.count == 0) {
      hit.first_order = ++order_;
      hit.first_reference = reference;
      hit.strength = strength;
      hit.how_located = std::move(how);
    } else if (strength < hit.strength) {  // kDecisive is the smallest value
      hit.strength = strength;
      hit.how_located = std::move(how);
    }
    ++hit.count;
    if (meaning) hit.meaning = meaning;
    hit.sigkill = hit.sigkill || sigkill;
    hit.max_pids = std::max(hit.max_pids, pids.size());
    keep_evidence(index, text, line_number, cause, strength);
  }

  /// One evidence line per log line: when several signatures match a line, the strongest
  /// names it (the others still count in the candidates' signatures).
  void keep_evidence(std::size_t index, const std::string& text, std::uint64_t line_number,
                     const std::string& cause, Strength strength) {
    std::vector<EvidenceLine>& evidence = observations_.evidence;
    for (std::size_t back = 0; back < std::min<std::size_t>(evidence.size(), 8); ++back) {
      const std::size_t at = evidence.size() - 1 - back;
      if (evidence[at].line != line_number || evidence[at].source != source_) continue;
      if (strength < evidence_strength_[at]) {
        evidence[at].signature = catalog_.signatures[index].id;
        evidence[at].cause = cause;
        evidence_strength_[at] = strength;
      }
      return;
    }
    if (kept_[index] >= kEvidencePerSignature || evidence.size() >= kMaxEvidence) return;
    ++kept_[index];
    evidence.push_back(EvidenceLine{source_, line_number, printable_utf8(text, kEvidenceTextBytes),
                                    catalog_.signatures[index].id, cause});
    evidence_strength_.push_back(strength);
  }

  /// Calls take(line) for up to `count` lines of `block` that end before `end`, nearest
  /// first, each cut at kTailLineBytes.
  template <typename Take>
  static void raw_lines_before(std::string_view block, std::size_t end, std::size_t count,
                               Take&& take) {
    for (; count > 0 && end > 0; --count) {
      const std::size_t stop = end - 1;  // the '\n' that ends the line
      const void* before = stop == 0 ? nullptr : memrchr(block.data(), '\n', stop);
      const std::size_t begin =
          before == nullptr
              ? 0
              : static_cast<std::size_t>(static_cast<const char*>(before) - block.data()) + 1;
      take(block.substr(begin, std::min(stop - begin, kTailLineBytes)));
      end = begin;
    }
  }

  /// Up to `count` normalised lines before `line_start`, nearest first, from the block and
  /// the saved tail.
  std::vector<std::string> previous_lines(std::string_view block, std::size_t line_start,
                                          std::size_t count) const {
    std::vector<std::string> lines;
    raw_lines_before(block, line_start, count,
                     [&](std::string_view raw) { lines.push_back(normalize_line(raw, 0)); });
    for (auto it = tail_.rbegin(); it != tail_.rend() && lines.size() < count; ++it)
      lines.push_back(normalize_line(*it, 0));
    return lines;
  }

  /// Keeps the block's last lines as they are (normalised only if a context asks for them:
  /// a block ends every 4 MiB of a long log, a context is wanted on a few lines).
  void remember_tail(std::string_view block) {
    std::vector<std::string_view> newest;
    raw_lines_before(block, block.size(), kTailLines,
                     [&](std::string_view raw) { newest.push_back(raw); });
    for (auto it = newest.rbegin(); it != newest.rend(); ++it) {
      tail_.emplace_back(*it);
      if (tail_.size() > kTailLines) tail_.pop_front();
    }
  }

  static constexpr std::size_t kAlways = ~std::size_t{0};

  std::shared_ptr<const CompiledCatalog> shared_;
  const Catalog& catalog_;
  LiteralScanner scanner_;  ///< a copy: its own scratch space
  const std::vector<std::vector<std::size_t>>& literal_signatures_;
  const std::vector<std::size_t>& always_;
  const std::vector<std::size_t>& paste_always_;
  const std::map<int, std::size_t>& meanings_;
  std::vector<std::size_t> kept_;
  std::vector<Strength> evidence_strength_;  ///< beside observations_.evidence
  std::vector<std::uint64_t> seen_on_line_;
  std::uint64_t generation_ = 0;
  std::vector<LiteralHit> hits_;
  BlockScan block_scan_;  ///< process_block's scan of its block (kept for its capacity)

  std::string source_;
  EnvelopeDecoder envelope_;
  const EnvelopeDecoder::Sink scan_ = [this](std::string_view bytes) { scan(bytes); };
  std::string carry_;
  bool skipping_ = false;
  std::uint64_t line_base_ = 0;
  std::uint64_t lines_before_source_ = 0;
  std::deque<std::string> tail_;  ///< the last lines read, raw (cut at kTailLineBytes)
  std::uint64_t order_ = 0;
  std::uint64_t source_bytes_ = 0;         ///< bytes of the current source scanned so far
  std::deque<Mark> marks_;                 ///< recent location hints of the current source
  std::vector<Pending> pending_;           ///< located errors waiting for a hint below them
  std::string prev_text_;                  ///< the previous line's end, for joined matches
  std::vector<std::size_t> matched_prev_;  ///< signatures that matched the previous line
  std::vector<std::size_t> matched_now_;   ///< ... and this one
};

std::shared_ptr<const CompiledCatalog> compile_catalog(const Catalog& catalog) {
  return std::make_shared<const CompiledCatalog>(catalog);
}

LogAnalyzer::LogAnalyzer(const Catalog& catalog) : LogAnalyzer(compile_catalog(catalog)) {}
LogAnalyzer::LogAnalyzer(std::shared_ptr<const CompiledCatalog> compiled)
    : impl_(std::make_unique<Impl>(std::move(compiled))) {}
LogAnalyzer::~LogAnalyzer() = default;

void LogAnalyzer::begin_source(std::string name) { impl_->begin_source(std::move(name)); }
void LogAnalyzer::feed(std::string_view bytes) { impl_->feed(bytes); }
bool LogAnalyzer::passes_through() const { return impl_->passes_through(); }
void LogAnalyzer::feed_scanned(std::string_view bytes, BlockScan& scan) {
  impl_->feed_scanned(bytes, scan);
}
LiteralScanner LogAnalyzer::literal_scanner() const { return impl_->literal_scanner(); }
void LogAnalyzer::note_exit(std::optional<int> exit_code, std::optional<int> signal) {
  impl_->observations_.exit_code = exit_code;
  impl_->observations_.signal = signal;
}
Diagnosis LogAnalyzer::finish() { return impl_->finish(); }

}  // namespace headroom
