// Confirming a diagnosis on this host. Each candidate cause has its own probes;
// only the candidates' probes run, so `explain --no-host` and a cause with no
// host side (gpu_oom) cost nothing. The checks of `headroom check` are reused
// through run_checks(only=...), so explain and check never disagree.

#include "core/explain/host.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/inotify_limits.h"
#include "core/kernel/kmsg.h"
#include "core/kernel/limits.h"
#include "core/signatures/catalog.h"
#include "core/signatures/reasoning.h"
#include "core/units.h"

namespace headroom {

namespace {

bool has_candidate(const Diagnosis& diagnosis, std::string_view cause) {
  return std::any_of(diagnosis.candidates.begin(), diagnosis.candidates.end(),
                     [&](const Candidate& candidate) { return candidate.cause == cause; });
}

/// Findings of `headroom check` become facts: a warn or critical finding confirms.
void add_check_facts(const Context& context, const CheckOptions& job,
                     const std::vector<std::string>& only, const std::string& cause,
                     HostConfirmation& host) {
  CheckOptions options = job;
  options.only = only;
  const Report report = run_checks(context, options);
  for (const Finding& finding : report.findings) {
    HostFact fact;
    fact.check = finding.id;
    fact.cause = finding.id == "shm.stale" ? "shm_stale" : cause;
    fact.summary =
        finding.severity == Severity::kUnknown && !finding.reason.empty()
            ? fmt::format("{}: {}", finding.summary.empty() ? finding.id : finding.summary,
                          finding.reason)
            : finding.summary;
    fact.evidence = finding.evidence;
    switch (finding.severity) {
      case Severity::kCritical:
      case Severity::kWarn:
        fact.verdict = HostVerdict::kConfirms;
        break;
      case Severity::kOk:
        fact.verdict = HostVerdict::kNeutral;
        break;
      case Severity::kUnknown:
        fact.verdict = HostVerdict::kUnknown;
        break;
    }
    host.facts.push_back(std::move(fact));
  }
}

void add_kernel_log_facts(const Context& context, const Diagnosis& diagnosis,
                          HostConfirmation& host) {
  HostFact fact;
  fact.check = "kmsg";
  fact.cause = "host_oom";
  auto log = read_kmsg(context);
  if (!log) {
    fact.verdict = HostVerdict::kUnknown;
    fact.summary = fmt::format("could not read the kernel log: {}", log.error().message);
    host.facts.push_back(std::move(fact));
    return;
  }
  const std::vector<OomEvent> events = parse_oom_events(log->records, log->boot_time);
  std::set<std::int64_t> pids(diagnosis.fields.pids.begin(), diagnosis.fields.pids.end());
  pids.insert(diagnosis.fields.killed_pids.begin(), diagnosis.fields.killed_pids.end());
  std::vector<const OomEvent*> matching;
  for (const OomEvent& event : events) {
    if (pids.count(event.pid) != 0) matching.push_back(&event);
  }
  fact.evidence.push_back(
      {"oom_kills_in_kernel_log", static_cast<std::uint64_t>(events.size()), "count"});
  if (!matching.empty()) {
    const OomEvent& event = *matching.front();
    fact.verdict = HostVerdict::kConfirms;
    fact.summary = fmt::format(
        "the kernel log has the OOM killer killing pid {} ({}), the pid named in the log{}",
        event.pid, event.comm,
        event.oom_cgroup.empty() ? "" : fmt::format("; limit of cgroup {}", event.oom_cgroup));
    fact.evidence.push_back({"killed_pid", static_cast<std::int64_t>(event.pid), ""});
    fact.evidence.push_back({"rss_bytes", event.rss_bytes(), "bytes"});
    fact.evidence.push_back({"constraint", std::string(to_string(event.constraint)), ""});
  } else if (!events.empty()) {
    // Kills of other pids may be another job's; only a pid the log names confirms.
    fact.verdict = HostVerdict::kNeutral;
    fact.summary = fmt::format(
        "the kernel log has {} OOM kill(s), none of a pid the log names (a container renumbers "
        "pids); last: pid {} ({})",
        events.size(), events.back().pid, events.back().comm);
  } else {
    fact.verdict = HostVerdict::kNeutral;
    fact.summary =
        "no OOM kill in the kernel log (it may have rotated, or the job ran on another host)";
  }
  host.facts.push_back(std::move(fact));
}

/// Free space of the nearest existing directory of each path the log names.
void add_path_facts(const Context& context, const Diagnosis& diagnosis, HostConfirmation& host) {
  std::set<std::string> seen;
  for (const std::string& named : diagnosis.fields.paths) {
    if (named.empty() || named.front() != '/' || named.rfind("/torch_", 0) == 0) continue;
    std::filesystem::path path = named;
    std::error_code error;
    while (path.has_parent_path() && path != path.root_path() &&
           !std::filesystem::is_directory(context.root.host(path), error)) {
      path = path.parent_path();
    }
    if (!seen.insert(path.string()).second || context.syscalls == nullptr) continue;
    HostFact fact;
    fact.check = "path.space";
    fact.cause = cause_for_path(named, "disk_full");
    auto stats = context.syscalls->statvfs(context.root.host(path));
    if (!stats) {
      fact.verdict = HostVerdict::kUnknown;
      fact.summary = fmt::format("{}: {}", path.string(), stats.error().message);
      host.facts.push_back(std::move(fact));
      continue;
    }
    fact.evidence.push_back({"path", path.string(), ""});
    fact.evidence.push_back({"avail_bytes", stats->avail_bytes, "bytes"});
    fact.evidence.push_back({"used_percent", stats->used_percent(), "percent"});
    fact.evidence.push_back({"inodes_used_percent", stats->inodes_used_percent(), "percent"});
    const bool full = stats->avail_bytes == 0 || stats->used_percent() >= 95 ||
                      (stats->total_inodes > 0 && stats->free_inodes == 0);
    fact.verdict = full ? HostVerdict::kConfirms : HostVerdict::kNeutral;
    fact.summary =
        fmt::format("{} is {} full now, {} free{}", path.string(),
                    format_percent(stats->used_percent()), format_bytes(stats->avail_bytes),
                    full ? "" : " (space may have been freed since the failure)");
    host.facts.push_back(std::move(fact));
  }
}

void add_fd_facts(const Context& context, HostConfirmation& host) {
  HostFact fact;
  fact.check = "fd.limit";
  fact.cause = "fd_limit";
  auto limit = context.syscalls != nullptr ? context.syscalls->open_files_limit()
                                           : Result<Limit>(fail(Error::invalid("no syscalls")));
  if (!limit) {
    fact.verdict = HostVerdict::kUnknown;
    fact.summary = limit.error().message;
  } else {
    // torch's file_descriptor strategy needs about one fd per tensor in flight; 1024 is the usual
    // default.
    fact.verdict = limit->soft <= 4096 ? HostVerdict::kConfirms : HostVerdict::kNeutral;
    fact.summary =
        limit->soft == Limit::kUnlimited
            ? "the open-files limit of this shell is unlimited"
            : fmt::format("the open-files limit of this shell is {} (soft) / {} (hard)",
                          limit->soft,
                          limit->hard == Limit::kUnlimited ? std::string("unlimited")
                                                           : std::to_string(limit->hard));
    fact.evidence.push_back({"nofile_soft", limit->soft, "count"});
  }
  host.facts.push_back(std::move(fact));
}

/// RLIMIT_MEMLOCK of the examined process: RDMA (NCCL over InfiniBand) registers
/// and pins its buffers, which a finite limit refuses.
void add_memlock_facts(const Context& context, HostConfirmation& host) {
  HostFact fact;
  fact.check = "memlock.limit";
  fact.cause = "memlock_limit";
  auto rows = read_limits(context);
  const std::optional<Limit> limit = rows ? find_limit(*rows, "Max locked memory") : std::nullopt;
  if (!limit) {
    fact.verdict = HostVerdict::kUnknown;
    fact.summary = rows ? "no 'Max locked memory' row in limits" : rows.error().message;
  } else if (limit->soft == Limit::kUnlimited) {
    fact.verdict = HostVerdict::kNeutral;
    fact.summary = "the locked-memory limit of this shell is unlimited";
  } else {
    fact.verdict = HostVerdict::kConfirms;  // RDMA stacks ask for unlimited
    fact.summary =
        fmt::format("the locked-memory limit of this shell is {} (ulimit -l {}), not unlimited",
                    format_bytes(limit->soft), limit->soft / 1024);
    fact.evidence.push_back({"memlock_soft_bytes", limit->soft, "bytes"});
  }
  host.facts.push_back(std::move(fact));
}

/// fs.inotify.max_user_watches / max_user_instances against their old low defaults.
void add_inotify_facts(const Context& context, HostConfirmation& host) {
  HostFact fact;
  fact.check = "inotify.limits";
  fact.cause = "inotify_limit";
  auto limits = read_inotify_limits(context);
  if (!limits) {
    fact.verdict = HostVerdict::kUnknown;
    fact.summary = limits.error().message;
    host.facts.push_back(std::move(fact));
    return;
  }
  // 8192 watches (kernels before 5.11) and 128 instances are the defaults that run out.
  const bool few_watches = limits->max_user_watches <= 8192;
  const bool few_instances = limits->max_user_instances <= 128;
  fact.verdict = few_watches || few_instances ? HostVerdict::kConfirms : HostVerdict::kNeutral;
  fact.summary = fmt::format("fs.inotify.max_user_watches is {}{} and max_user_instances {}{}",
                             limits->max_user_watches, few_watches ? " (the old low default)" : "",
                             limits->max_user_instances, few_instances ? " (the low default)" : "");
  fact.evidence.push_back({"max_user_watches", limits->max_user_watches, "count"});
  fact.evidence.push_back({"max_user_instances", limits->max_user_instances, "count"});
  host.facts.push_back(std::move(fact));
}

Confidence step(Confidence confidence, int by) {
  const int value = std::clamp(static_cast<int>(confidence) + by, 0, 2);
  return static_cast<Confidence>(value);
}

/// The log shows a write failing as on a full disk (torch.save's "PytorchStreamWriter
/// failed writing file" is the same for EFBIG), and this host has a file size limit:
/// that limit becomes a candidate, first unless a filesystem the log names is full now.
void add_file_size_candidate(Diagnosis& diagnosis, const HostConfirmation& host,
                             const HostFact& fact) {
  auto disk =
      std::find_if(diagnosis.candidates.begin(), diagnosis.candidates.end(),
                   [](const Candidate& candidate) { return candidate.cause == "disk_full"; });
  if (disk == diagnosis.candidates.end()) return;
  const bool disk_full_now =
      std::any_of(host.facts.begin(), host.facts.end(), [](const HostFact& other) {
        return other.cause == "disk_full" && other.verdict == HostVerdict::kConfirms;
      });
  Candidate limit;
  limit.cause = "file_size_limit";
  limit.score = disk_full_now ? disk->score - 1 : disk->score + 1;
  limit.confidence = disk_full_now ? step(disk->confidence, -1) : disk->confidence;
  limit.signatures = disk->signatures;
  limit.matches = disk->matches;
  limit.reasoning.push_back(fmt::format(
      "the log shows a write that failed as on a full disk, and on this host {}: a file larger "
      "than the limit fails with the same words{}.",
      fact.summary,
      disk_full_now ? "; but a filesystem the log names is full too"
                    : "; no filesystem the log names is full now"));
  diagnosis.candidates.push_back(std::move(limit));
}

}  // namespace

std::string_view to_string(HostVerdict verdict) {
  switch (verdict) {
    case HostVerdict::kConfirms:
      return "confirms";
    case HostVerdict::kContradicts:
      return "contradicts";
    case HostVerdict::kNeutral:
      return "neutral";
    case HostVerdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

HostConfirmation confirm_on_host(const Context& context, const Diagnosis& diagnosis,
                                 const CheckOptions& job) {
  HostConfirmation host;
  host.performed = true;
  host.runtime = detect_runtime(context);
  if (has_candidate(diagnosis, "host_oom")) {
    add_kernel_log_facts(context, diagnosis, host);
    add_check_facts(context, job, {"memory"}, "host_oom", host);
  }
  if (has_candidate(diagnosis, "shm_too_small") || has_candidate(diagnosis, "shm_stale")) {
    add_check_facts(context, job, {"shm"}, "shm_too_small", host);
  }
  if (has_candidate(diagnosis, "disk_full") || has_candidate(diagnosis, "tmp_full")) {
    add_path_facts(context, diagnosis, host);
  }
  if (has_candidate(diagnosis, "tmp_full"))
    add_check_facts(context, job, {"tmp"}, "tmp_full", host);
  if (has_candidate(diagnosis, "fd_limit")) add_fd_facts(context, host);
  // pids.limit with a one-process job: the room left under the limit that binds.
  if (has_candidate(diagnosis, "pid_limit"))
    add_check_facts(context, job, {"pids.limit"}, "pid_limit", host);
  // torch.save prints the words of a full disk for EFBIG too: read the limit for both.
  if (has_candidate(diagnosis, "file_size_limit") || has_candidate(diagnosis, "disk_full")) {
    add_check_facts(context, job, {"fsize.limit"}, "file_size_limit", host);
  }
  if (has_candidate(diagnosis, "memlock_limit")) add_memlock_facts(context, host);
  if (has_candidate(diagnosis, "inotify_limit")) add_inotify_facts(context, host);
  return host;
}

void apply_host(Diagnosis& diagnosis, const HostConfirmation& host) {
  if (!host.performed || diagnosis.candidates.empty()) return;
  for (const HostFact& fact : host.facts) {
    auto found =
        std::find_if(diagnosis.candidates.begin(), diagnosis.candidates.end(),
                     [&](const Candidate& candidate) { return candidate.cause == fact.cause; });
    if (fact.cause == "shm_stale" && fact.verdict == HostVerdict::kConfirms &&
        found == diagnosis.candidates.end()) {
      // The log says /dev/shm ran out; this host shows dead jobs' segments filling it.
      auto small = std::find_if(
          diagnosis.candidates.begin(), diagnosis.candidates.end(),
          [](const Candidate& candidate) { return candidate.cause == "shm_too_small"; });
      if (small == diagnosis.candidates.end()) continue;
      Candidate stale;
      stale.cause = "shm_stale";
      stale.score = small->score + 1;
      stale.confidence = small->confidence;
      stale.signatures = small->signatures;
      stale.matches = small->matches;
      stale.reasoning.push_back(
          fmt::format("the log shows /dev/shm ran out, and on this host {}: segments of dead jobs, "
                      "not the size, filled it.",
                      fact.summary));
      diagnosis.candidates.push_back(std::move(stale));
      continue;
    }
    if (fact.cause == "file_size_limit" && fact.verdict == HostVerdict::kConfirms &&
        found == diagnosis.candidates.end()) {
      add_file_size_candidate(diagnosis, host, fact);
      continue;
    }
    if (found == diagnosis.candidates.end()) continue;
    if (fact.verdict == HostVerdict::kConfirms) {
      found->score += 5;
      found->confidence = step(found->confidence, 1);
      found->reasoning.push_back("confirmed on this host: " + fact.summary + ".");
    } else if (fact.verdict == HostVerdict::kContradicts) {
      found->score -= 3;
      found->confidence = step(found->confidence, -1);
      found->reasoning.push_back("contradicted on this host: " + fact.summary + ".");
    }
  }
  std::stable_sort(diagnosis.candidates.begin(), diagnosis.candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
}

namespace {

/// A number the shm.capacity check measured while confirming, if it ran.
std::optional<std::uint64_t> shm_evidence(const HostConfirmation& host, std::string_view name) {
  for (const HostFact& fact : host.facts) {
    if (fact.check != "shm.capacity") continue;
    for (const Evidence& evidence : fact.evidence) {
      if (evidence.name != name) continue;
      if (const auto* bytes = std::get_if<std::uint64_t>(&evidence.value)) return *bytes;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> remedies_for(const Diagnosis& diagnosis, const HostConfirmation& host) {
  std::vector<std::string> lines;
  const Runtime& runtime = host.runtime;
  const Candidate* verdict = diagnosis.verdict();
  if (verdict == nullptr) return lines;
  std::string_view generic;  // a catalog remedy that the lines below already say concretely
  if (verdict->cause == "shm_too_small") {
    // The size the shm.capacity check recommends (from the job's shape under run), else the
    // size it asks for without one; NCCL names its segment size, which can need more.
    std::uint64_t need =
        shm_evidence(host, "recommended_size_bytes").value_or(kShmSizeWithoutShape);
    for (std::uint64_t size : diagnosis.fields.sizes) need = std::max(need, size * 16);
    const ShmFacts facts{shm_evidence(host, "size_bytes"), shm_evidence(host, "memory_total_bytes"),
                         shm_evidence(host, "memory_limit_bytes")};
    lines = shm_remedies(runtime, need, facts);
    // Those lines are the concrete form of the catalog's "give the job a larger /dev/shm".
    for (const std::string& remedy : diagnosis.remedies) {
      if (remedy.find("stale segments") != std::string::npos) {
        lines.emplace_back("or remove the segments of dead jobs: headroom clean --shm");
        break;
      }
    }
    generic = "give the job a larger /dev/shm";
  } else if (verdict->cause == "shm_stale") {
    lines.emplace_back(
        "remove the segments no live process holds: headroom clean --shm (lists them first)");
  } else if (verdict->cause == "file_size_limit") {
    // The catalog's words, so that the same remedy of an EFBIG signature is not listed twice.
    lines.emplace_back(
        "remove the file size limit in the shell that starts the job: ulimit -f unlimited "
        "(headroom check --only fsize names the fix for this runtime: limits.conf fsize, "
        "LimitFSIZE=, docker --ulimit fsize=-1:-1)");
  } else if (verdict->cause == "fd_limit" && runtime.kind == RuntimeKind::kDocker) {
    lines.emplace_back("docker run --ulimit nofile=65536:65536 ...");
  }
  for (const std::string& remedy : diagnosis.remedies) {
    if (!generic.empty() && remedy.starts_with(generic)) continue;
    // Signatures of one cause word the same advice more or less fully: keep the fuller.
    auto same = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.starts_with(remedy) || remedy.starts_with(line);
    });
    if (same == lines.end()) {
      lines.push_back(remedy);
    } else if (remedy.size() > same->size()) {
      *same = remedy;
    }
  }
  return lines;
}

Conclusion conclude(const Context* context, Diagnosis& diagnosis, const CheckOptions& job) {
  Conclusion conclusion;
  if (context != nullptr) {
    conclusion.host = confirm_on_host(*context, diagnosis, job);
    apply_host(diagnosis, conclusion.host);
  }
  conclusion.remedy = remedies_for(diagnosis, conclusion.host);
  return conclusion;
}

}  // namespace headroom
