// explain's two outputs. The text answers first (the cause and how sure), then
// proves it (log lines with their numbers), then says what this host showed
// and what to do. Strings from the log are already valid UTF-8 (printable_utf8).

#include "core/explain/render.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/report/json.h"
#include "core/signatures/catalog.h"
#include "core/signatures/normalize.h"
#include "core/units.h"

namespace headroom {

namespace {

/// One line for people: what each cause means.
std::string_view describe(std::string_view cause) {
  if (cause == "shm_too_small") return "/dev/shm is missing, too small or full for the job";
  if (cause == "shm_stale")
    return "/dev/shm is filled by segments of dead jobs, or a segment a process needed was removed";
  if (cause == "disk_full") return "a filesystem the job writes to (checkpoints, caches) is full";
  if (cause == "tmp_full") return "the temp dir is full or unusable";
  if (cause == "host_oom")
    return "the host or the job's memory limit ran out: a process was killed or could not get "
           "memory";
  if (cause == "fd_limit") return "a process hit its open-files limit";
  if (cause == "pid_limit") return "the job hit its process/thread limit (ulimit -u, pids cgroup)";
  if (cause == "fs_readonly")
    return "a filesystem the job writes to is read-only (mounted so, or remounted after errors)";
  if (cause == "io_error") return "the storage under a file failed (I/O errors: disk, NFS, FUSE)";
  if (cause == "inotify_limit")
    return "a file watcher hit the inotify limits (not a full disk or the open-files limit)";
  if (cause == "memlock_limit")
    return "the locked-memory limit (ulimit -l) is too low for InfiniBand/RDMA";
  if (cause == "port_in_use")
    return "a port the job listens on is held by another process (a leftover run?)";
  if (cause == "file_size_limit")
    return "a file reached the largest size allowed: the file size limit (ulimit -f) or the "
           "filesystem's maximum file size";
  if (cause == "gpu_oom") return "the GPU ran out of its own memory (not a host problem)";
  if (cause == "dataset_code") return "an exception in the dataset code (not a host problem)";
  if (cause == "nccl_network")
    return "a collective timed out or a peer connection broke (network, or another rank died "
           "first)";
  if (cause == "native_crash") return "a crash in native code (not a host problem)";
  if (cause == "interrupted") return "the job was interrupted (Ctrl-C / SIGINT)";
  if (cause == "terminated")
    return "the job was stopped by a scheduler or a user (SIGTERM or SIGKILL, a time limit)";
  return "";
}

std::string location(const EvidenceLine& line) {
  return line.source.empty() ? fmt::format("line {}", line.line)
                             : fmt::format("{}:{}", line.source, line.line);
}

template <typename T>
nlohmann::ordered_json list(const std::vector<T>& values) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const T& value : values) out.push_back(value);
  return out;
}

std::string color(const TextStyle& style, std::string_view code) {
  return style.color ? std::string(code) : std::string();
}

}  // namespace

nlohmann::ordered_json explain_to_json(const Diagnosis& diagnosis, const HostConfirmation& host,
                                       const std::vector<std::string>& remedy) {
  nlohmann::ordered_json out;
  const Candidate* verdict = diagnosis.verdict();
  out["verdict"] = {
      {"cause", verdict != nullptr ? verdict->cause : "unknown"},
      {"confidence", verdict != nullptr ? std::string(to_string(verdict->confidence)) : "low"},
      {"found", verdict != nullptr},
      {"host_cause", verdict != nullptr && is_host_cause(verdict->cause)},
      {"summary",
       verdict != nullptr ? std::string(describe(verdict->cause)) : "no known failure in the log"},
  };
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const Candidate& candidate : diagnosis.candidates) {
    candidates.push_back({{"cause", candidate.cause},
                          {"confidence", to_string(candidate.confidence)},
                          {"score", candidate.score},
                          {"host_cause", is_host_cause(candidate.cause)},
                          {"matches", candidate.matches},
                          {"signatures", list(candidate.signatures)},
                          {"reasoning", list(candidate.reasoning)}});
  }
  out["candidates"] = candidates;
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const EvidenceLine& line : diagnosis.evidence) {
    nlohmann::ordered_json item = {{"line", line.line},
                                   {"text", line.text},
                                   {"signature", line.signature},
                                   {"cause", line.cause}};
    if (!line.source.empty()) item["source"] = printable_utf8(line.source, 4096);
    evidence.push_back(item);
  }
  out["evidence"] = evidence;
  const ExtractedFields& fields = diagnosis.fields;
  nlohmann::ordered_json paths = nlohmann::ordered_json::array();
  for (const std::string& path : fields.paths) paths.push_back(printable_utf8(path, 4096));
  nlohmann::ordered_json signals = nlohmann::ordered_json::array();
  for (const std::string& signal : fields.signals) signals.push_back(printable_utf8(signal, 64));
  out["fields"] = {{"pids", list(fields.pids)},
                   {"killed_pids", list(fields.killed_pids)},
                   {"paths", paths},
                   {"sizes", list(fields.sizes)},
                   {"signals", signals},
                   {"errnos", list(fields.errnos)},
                   {"exit_codes", list(fields.exit_codes)}};
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();
  for (const HostFact& fact : host.facts) {
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    for (const Evidence& item : fact.evidence) items.push_back(to_json(item));
    facts.push_back({{"check", fact.check},
                     {"cause", fact.cause},
                     {"verdict", to_string(fact.verdict)},
                     {"summary", fact.summary},
                     {"evidence", items}});
  }
  out["host"] = {
      {"checked", host.performed},
      {"environment", host.performed ? std::string(to_string(host.runtime.kind)) : "unknown"},
      {"facts", facts}};
  out["remedy"] = list(remedy);
  out["explanation"] = list(diagnosis.explanations);
  out["input"] = {{"lines", diagnosis.lines}, {"bytes", diagnosis.bytes}};
  return out;
}

std::string render_explain_text(const Diagnosis& diagnosis, const HostConfirmation& host,
                                const std::vector<std::string>& remedy, const TextStyle& style) {
  const std::string bold = color(style, "\x1b[1m");
  const std::string red = color(style, "\x1b[31m");
  const std::string green = color(style, "\x1b[32m");
  const std::string yellow = color(style, "\x1b[33m");
  const std::string dim = color(style, "\x1b[2m");
  const std::string reset = color(style, "\x1b[0m");
  std::string out;
  const Candidate* verdict = diagnosis.verdict();
  if (verdict == nullptr) {
    out += fmt::format("{}no known cause{} in {}: nothing in the log matches the catalog.\n", bold,
                       reset, format_count(diagnosis.lines, "line"));
    out +=
        "Pass the full log (all ranks, and `dmesg` or `kubectl describe pod` output), or add a "
        "signature with --catalog DIR.\n";
    return out;
  }
  const bool host_cause = is_host_cause(verdict->cause);
  out +=
      fmt::format("{}{}{}{} ({} confidence): {}\n", bold, host_cause ? red : yellow, verdict->cause,
                  reset, to_string(verdict->confidence), describe(verdict->cause));
  if (!host_cause) out += "This is not a host-resource problem.\n";
  if (!diagnosis.explanations.empty()) out += "\n" + diagnosis.explanations.front() + "\n";

  out += fmt::format("\n{}Evidence{}\n", bold, reset);
  std::size_t shown = 0;
  for (const EvidenceLine& line : diagnosis.evidence) {
    // A candidate the host check added (shm_stale, file_size_limit) rests on another cause's lines.
    const bool relevant = line.cause == verdict->cause ||
                          std::find(verdict->signatures.begin(), verdict->signatures.end(),
                                    line.signature) != verdict->signatures.end();
    if (!relevant && !style.verbose) continue;
    if (++shown > 12 && !style.verbose) break;
    const bool cut = line.text.size() > 160 && !style.verbose;
    const std::string_view text = cut ? std::string_view(line.text).substr(0, 157) : line.text;
    out += fmt::format("  {}{:>8}{}  {}{}  {}[{}]{}\n", dim, location(line), reset, text,
                       cut ? "..." : "", dim, line.signature, reset);
  }
  out += fmt::format("\n{}Reasoning{}\n", bold, reset);
  for (const std::string& step : verdict->reasoning) out += fmt::format("  - {}\n", step);

  if (host.performed) {
    out += fmt::format("\n{}On this host{} ({})\n", bold, reset, to_string(host.runtime.kind));
    if (host.facts.empty()) out += "  nothing to check for this cause\n";
    for (const HostFact& fact : host.facts) {
      const std::string mark =
          fact.verdict == HostVerdict::kConfirms      ? fmt::format("{}confirms{}", green, reset)
          : fact.verdict == HostVerdict::kContradicts ? fmt::format("{}contradicts{}", red, reset)
          : fact.verdict == HostVerdict::kUnknown     ? fmt::format("{}unknown{}", yellow, reset)
                                                      : fmt::format("{}neutral{}", dim, reset);
      out += fmt::format("  {:<12} {} {}\n", fact.check, mark, fact.summary);
    }
  } else {
    out += fmt::format("\n{}On this host{}: not checked (--no-host)\n", bold, reset);
  }
  if (diagnosis.candidates.size() > 1) {
    out += fmt::format("\n{}Other candidates{}\n", bold, reset);
    for (std::size_t i = 1; i < diagnosis.candidates.size(); ++i) {
      const Candidate& candidate = diagnosis.candidates[i];
      out += fmt::format("  {} ({}): {}\n", candidate.cause, to_string(candidate.confidence),
                         candidate.reasoning.empty() ? std::string(describe(candidate.cause))
                                                     : candidate.reasoning.front());
    }
  }
  if (!remedy.empty()) {
    out += fmt::format("\n{}Fix{}\n", bold, reset);
    for (const std::string& line : remedy) out += "  " + line + "\n";
  }
  return out;
}

}  // namespace headroom
