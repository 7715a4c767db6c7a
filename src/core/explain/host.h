#pragma once
// Confirming a diagnosis on the live host: the kernel log for the pids the log
// names, /dev/shm size and stale bytes, the cgroup's OOM counter, the free
// space and inodes of the paths the log names, the open-files limit.

#include <string>
#include <vector>

#include "core/checks/check.h"
#include "core/context.h"
#include "core/finding.h"
#include "core/kernel/runtime.h"
#include "core/signatures/diagnosis.h"

namespace headroom {

/// What one host check said about a candidate cause.
enum class HostVerdict { kConfirms, kContradicts, kNeutral, kUnknown };

/// "confirms", "contradicts", "neutral", "unknown".
[[nodiscard]] std::string_view to_string(HostVerdict verdict);

/// One fact measured on this host, and which cause it bears on.
struct HostFact {
  std::string check;  ///< "kmsg", "shm.capacity", "shm.stale", "memory.oom_kill", "path.space", ...
  std::string cause;  ///< the cause it bears on
  HostVerdict verdict = HostVerdict::kNeutral;
  std::string summary;  ///< one sentence for people, e.g. "dmesg: Killed process 29403 (python3)"
  std::vector<Evidence> evidence;
};

/// Everything confirm_on_host measured, plus the runtime used for remedies.
struct HostConfirmation {
  bool performed = false;  ///< false with --no-host
  Runtime runtime;
  std::vector<HostFact> facts;
};

/// Runs the host checks relevant to the diagnosis' candidates. Never fails:
/// what cannot be read becomes a fact with HostVerdict::kUnknown and the reason.
/// `job`: what is known of the job (run's --workers, --batch-bytes, --ranks, ...), so
/// the checks judge, and size their remedies for, that job.
[[nodiscard]] HostConfirmation confirm_on_host(const Context& context, const Diagnosis& diagnosis,
                                               const CheckOptions& job = {});

/// Re-ranks candidates with the host facts: confirmation raises confidence,
/// contradiction lowers it, stale bytes turn shm_too_small into shm_stale. Adds reasoning.
void apply_host(Diagnosis& diagnosis, const HostConfirmation& host);

/// Remedies for the verdict in the dialect of the runtime (docker --shm-size,
/// a Kubernetes emptyDir, ...), then the catalog's own remedies. A /dev/shm is sized as the
/// shm.capacity check recommended while confirming (for run, from the job's shape), else
/// kShmSizeWithoutShape or more for the NCCL segments the log names, and bounded by what
/// that check measured (shm_remedies); with --no-host nothing is measured.
[[nodiscard]] std::vector<std::string> remedies_for(const Diagnosis& diagnosis,
                                                    const HostConfirmation& host);

/// What the explain pipeline concludes once the log is read.
struct Conclusion {
  HostConfirmation host;            ///< not performed without a context
  std::vector<std::string> remedy;  ///< remedies_for the (re-ranked) verdict
};

/// The one explain pipeline after the log is read, for explain and run's post-mortem:
/// confirm the candidates on this host (none without `context`: explain --no-host),
/// re-rank with what was measured (apply_host), and the remedies for the verdict. `job`:
/// what is known of the job's shape (run's --workers, ...).
[[nodiscard]] Conclusion conclude(const Context* context, Diagnosis& diagnosis,
                                  const CheckOptions& job = {});

}  // namespace headroom
