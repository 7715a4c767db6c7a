#pragma once
// From matched lines to ranked causes. The analyzer records what each matching
// line said (Observations); reason() weighs it and applies the rules that need
// several lines at once (a worker killed by SIGKILL whose pid the kernel's OOM
// killer named is host_oom with high confidence).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/signatures/catalog.h"
#include "core/signatures/diagnosis.h"

namespace headroom {

/// What one (signature, cause) pair matched over the whole input.
struct HitSummary {
  std::uint64_t count = 0;
  std::uint64_t first_order = 0;  ///< global order of the first match, for tie-breaks
  std::string first_reference;    ///< "line 12" or "job.log:12"
  /// The strongest any of its matches counted for: a located error whose place was only
  /// inferred (from the traceback around it, or not at all) counts as strong at most.
  Strength strength = Strength::kSuggestive;
  bool sigkill = false;      ///< a match reported a death by SIGKILL (or status 137)
  std::size_t max_pids = 0;  ///< the most pids one matching line named
  std::string how_located;   ///< for a located error: why it is at that place, for reasoning
  /// For a reported signal: the [[signal]] entry that says what it means (its index).
  std::optional<std::size_t> meaning;
};

/// Everything the scan kept; bounded by the catalog, not by the log.
struct Observations {
  std::map<std::pair<std::size_t, std::string>, HitSummary> hits;  ///< (signature, cause)
  ExtractedFields fields;
  /// (pid, signal text) of processes the job reported dead by a signal.
  std::vector<std::pair<std::int64_t, std::string>> signalled_pids;
  /// (pid, reference) of processes a kernel or userspace OOM killer ended.
  std::vector<std::pair<std::int64_t, std::string>> killed_pids;
  std::vector<EvidenceLine> evidence;
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
};

/// Weighs the observations into ranked candidates with reasoning.
[[nodiscard]] Diagnosis reason(const Catalog& catalog, Observations observations);

/// Where a path named in an error lies: "shm" (/dev/shm and POSIX shm object names such as
/// /torch_*, /nccl-*, /psm_*), "tmp" (/tmp, /var/tmp, a tmp dir anywhere, pymp-*, listener-*,
/// torchinductor_*, tempfile's tmpXXXXXXXX), or "disk".
[[nodiscard]] std::string_view location_for_path(std::string_view path);

/// Classifies a path named in an error: /dev/shm -> "shm_too_small", temp dirs
/// (/tmp, /var/tmp, pymp-*, listener-*) -> "tmp_full", otherwise `fallback`.
[[nodiscard]] std::string cause_for_path(std::string_view path, std::string_view fallback);

}  // namespace headroom
