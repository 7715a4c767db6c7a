#pragma once
// What explain concludes from a log: ranked candidate causes with a confidence
// and the reasoning behind them, the log lines that prove it, and the fields
// (pids, paths, sizes, signals, errnos) those lines carry. JSON: docs/json.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

enum class Confidence { kLow, kMedium, kHigh };

/// "low", "medium", "high".
[[nodiscard]] std::string_view to_string(Confidence confidence);

/// One log line that matched a signature.
struct EvidenceLine {
  std::string source;      ///< file name, "-" for stdin, "" for a single unnamed stream
  std::uint64_t line = 0;  ///< 1-based line number within the source
  std::string text;        ///< the normalised line (no ANSI, no prefix), at most 512 bytes
  std::string signature;   ///< signature id
  std::string cause;       ///< cause this line points to (after path classification)
};

/// Values extracted by the named groups of the matching patterns, deduplicated, bounded.
struct ExtractedFields {
  std::vector<std::int64_t> pids;         ///< pids named by the job (DataLoader workers, ranks)
  std::vector<std::int64_t> killed_pids;  ///< pids the kernel or a userspace killer ended
  std::vector<std::string> paths;         ///< files and dirs named in errors
  std::vector<std::uint64_t> sizes;       ///< byte counts (e.g. NCCL segment size)
  std::vector<std::string> signals;       ///< "Bus error", "Killed", "SIGKILL", ...
  std::vector<int> errnos;                ///< 28, 24, ...
  std::vector<int> exit_codes;            ///< 137, 1, ...
};

/// One possible cause, with how sure explain is and why.
struct Candidate {
  std::string cause;
  double score = 0;  ///< relative weight of evidence; candidates are sorted by it
  Confidence confidence = Confidence::kLow;
  std::vector<std::string> reasoning;   ///< full sentences, in the order they were concluded
  std::vector<std::string> signatures;  ///< ids of the signatures that matched for it
  std::uint64_t matches = 0;  ///< matching lines, including those beyond the kept evidence
};

/// The result of analysing one or more logs.
struct Diagnosis {
  std::vector<Candidate> candidates;   ///< ranked, best first; empty when nothing matched
  std::vector<EvidenceLine> evidence;  ///< bounded: a few lines per signature, in log order
  ExtractedFields fields;
  std::vector<std::string> explanations;  ///< explanation text of the verdict's signatures
  std::vector<std::string> remedies;      ///< catalog remedies of the verdict's signatures
  std::uint64_t lines = 0;                ///< lines read, over all sources
  std::uint64_t bytes = 0;                ///< bytes read, over all sources
  std::optional<int> exit_code;           ///< the job's exit status, when the caller knew it
  std::optional<int> signal;              ///< the signal that ended the job, when known

  /// The best candidate, or nullptr when no cause was found.
  [[nodiscard]] const Candidate* verdict() const {
    return candidates.empty() ? nullptr : &candidates.front();
  }
};

}  // namespace headroom
