// Weighing matches into causes. A signature counts once per cause however
// often it repeats (a hung job prints the same traceback thousands of times);
// strength sets its weight; rules that need several lines add to the score
// and say why in the reasoning.

#include "core/signatures/reasoning.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/signatures/signals.h"

namespace headroom {

namespace {

constexpr double kDecisive = 10;
constexpr double kStrong = 5;
constexpr double kSuggestive = 1;

double weight(Strength strength) {
  switch (strength) {
    case Strength::kDecisive:
      return kDecisive;
    case Strength::kStrong:
      return kStrong;
    case Strength::kSuggestive:
      return kSuggestive;
  }
  return kSuggestive;
}

/// The first sentence of an explanation, for the reasoning list.
std::string first_sentence(const std::string& text) {
  const std::size_t end = text.find(". ");
  return end == std::string::npos ? text : text.substr(0, end + 1);
}

bool is_kill_signal(std::string_view signal) { return signal_number(signal) == 9; }

struct Building {
  Candidate candidate;
  bool decisive = false;
  bool firm = false;           ///< some line for it is more than suggestive
  bool only_kills = true;      ///< every such line reports a death by SIGKILL, nothing more
  std::size_t group_pids = 0;  ///< the most pids one suggestive line named at once
  std::uint64_t first_order = ~std::uint64_t{0};
};

/// Lets a cause supported by a strong line lead over a wrapper cause.
// Wrappers: NCCL timeouts and lost connections are what the surviving ranks
// print when a peer died, and "Caught <X> in DataLoader worker" re-raises
// whatever the worker hit. Without a decisive line of their own, any other
// cause the log supports as strongly is the first failure (the worker's error
// is what made a rank stop, so NCCL timeouts yield to it, not the reverse);
// never a stop by a user or scheduler, which may well have followed a hung
// collective.
void lead_past_wrappers(std::vector<Building>& ranked) {
  if (ranked.size() < 2 || ranked[0].decisive) return;
  const std::string& top = ranked[0].candidate.cause;
  const char* why =
      top == "nccl_network" ? "the NCCL timeouts and lost connections in the log follow from this: "
                              "the other ranks wait for (or lose) the process that died."
      : top == "dataset_code" ? "the exception re-raised from the DataLoader worker is this error, "
                                "not a bug in the dataset code."
                              : nullptr;
  if (why == nullptr) return;
  const auto first = std::find_if(ranked.begin() + 1, ranked.end(), [](const Building& b) {
    const std::string& cause = b.candidate.cause;
    return b.candidate.score >= kStrong && cause != "nccl_network" && cause != "terminated" &&
           cause != "interrupted";
  });
  if (first == ranked.end()) return;
  first->candidate.reasoning.emplace_back(why);
  std::rotate(ranked.begin(), first, first + 1);
}

/// A stop from outside (a cancellation, a SIGTERM, Ctrl-C) reported after a failure the log
/// names is what happened to the job next, not why it failed: that failure leads. A stop
/// that came first keeps its lead (it may well explain the kills after it).
void failure_before_stop(std::vector<Building>& ranked) {
  if (ranked.size() < 2 || ranked[0].decisive) return;
  const std::string& top = ranked[0].candidate.cause;
  if (top != "terminated" && top != "interrupted") return;
  const auto first = std::find_if(ranked.begin() + 1, ranked.end(), [&](const Building& b) {
    return b.firm && b.first_order < ranked[0].first_order && b.candidate.cause != "nccl_network";
  });
  if (first == ranked.end()) return;
  first->candidate.reasoning.push_back(fmt::format(
      "the {} the log reports came after this failure: it is what happened to the job next.",
      top == "terminated" ? "stop" : "interrupt"));
  std::rotate(ranked.begin(), first, first + 1);
}

/// Rules that read two causes together.
void weigh_together(std::map<std::string, Building>& causes) {
  const auto has = [&](const char* cause) { return causes.count(cause) != 0; };
  // A scheduler's or user's stop explains the SIGKILLs after it: Slurm kills what did not
  // exit KillWait seconds after SIGTERM, Kubernetes after the grace period. Only a record
  // of the OOM killer (decisive) or a memory error keeps host_oom ahead.
  if (has("terminated") && has("host_oom")) {
    Building& stop = causes["terminated"];
    Building& oom = causes["host_oom"];
    // Only a stop seen before the kills: srun terminating the other tasks after one was
    // killed, or torchrun closing the peers of a dead rank, is the cleanup, not the cause.
    if (stop.firm && !oom.decisive && oom.only_kills && stop.first_order < oom.first_order) {
      stop.candidate.score += oom.candidate.score;
      stop.candidate.reasoning.emplace_back(
          "the SIGKILL the log reports follows a stop from outside (a time limit, preemption, "
          "a cancel or hangup), which kills what is still running after its grace period; no "
          "line shows the OOM killer.");
    }
  }
  // Leftover segments explain a full /dev/shm: the failure is the shortage, its cause the
  // segments dead jobs left behind.
  if (has("shm_stale") && has("shm_too_small") && causes["shm_stale"].firm) {
    Building& stale = causes["shm_stale"];
    stale.candidate.score += causes["shm_too_small"].candidate.score;
    stale.decisive = stale.decisive || causes["shm_too_small"].decisive;
    stale.candidate.reasoning.emplace_back(
        "/dev/shm ran out, and the log shows what fills it: segments of earlier or dead jobs.");
  }
  // Several DataLoader workers reported dead at once, with nothing saying how: the OOM
  // killer ends one process at a time (the largest, which is usually the main process);
  // all the workers of a process that lives on end together when a signal reaches the
  // whole process group, as Ctrl-C in the terminal does.
  if (has("host_oom") && !has("interrupted") && !causes["host_oom"].firm &&
      causes["host_oom"].group_pids >= 2) {
    Building& group = causes["interrupted"];
    group.candidate.cause = "interrupted";
    group.candidate.score = causes["host_oom"].candidate.score + 0.5;
    group.first_order = causes["host_oom"].first_order;
    group.candidate.reasoning.emplace_back(fmt::format(
        "{} workers died at the same moment while the main process lived on: a signal to the "
        "whole process group (Ctrl-C, a kill of the group) ends them together; the OOM killer "
        "takes one process at a time.",
        causes["host_oom"].group_pids));
  }
}

}  // namespace

std::string_view location_for_path(std::string_view path) {
  const auto starts = [&](std::string_view prefix) {
    return path.substr(0, prefix.size()) == prefix;
  };
  const auto has = [&](std::string_view part) { return path.find(part) != std::string_view::npos; };
  // POSIX shm objects are named "/name" (shm_open) and live in /dev/shm; semaphores as sem.*.
  if (starts("/dev/shm") || starts("/run/shm") || starts("/torch_") || starts("/nccl-") ||
      starts("/psm_") || starts("/sem.") || starts("/loky-") || starts("/wnsm_")) {
    return "shm";
  }
  if (starts("/tmp") || starts("/var/tmp") || starts("/usr/tmp") || has("/pymp-") ||
      starts("pymp-") || has("listener-") || has("/torchinductor_") || has("/tmp/") ||
      has("/temp/") || has("/TMP/") || has("/Temp/")) {
    return "tmp";
  }
  // tempfile's own names (tmpXXXXXXXX) are in whatever TMPDIR is.
  for (std::size_t at = path.find("/tmp"); at != std::string_view::npos;
       at = path.find("/tmp", at + 1)) {
    std::size_t end = at + 4;
    while (end < path.size() && path[end] != '/') ++end;
    if (end - at == 12) return "tmp";
  }
  return "disk";
}

std::string cause_for_path(std::string_view path, std::string_view fallback) {
  const std::string_view where = location_for_path(path);
  if (where == "shm") return "shm_too_small";
  if (where == "tmp") return "tmp_full";
  return std::string(fallback);
}

Diagnosis reason(const Catalog& catalog, Observations observations) {
  std::map<std::string, Building> causes;
  // Signatures in the order they first matched, so reasoning reads like the log.
  std::vector<std::pair<std::pair<std::size_t, std::string>, HitSummary>> hits(
      observations.hits.begin(), observations.hits.end());
  std::sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) {
    return a.second.first_order < b.second.first_order;
  });
  // One line is one piece of evidence: when several signatures of a cause matched the
  // same line first, only the strongest weighs.
  std::erase_if(hits, [&](const auto& hit) {
    return hit.second.count < catalog.signatures[hit.first.first].min_matches;
  });
  std::map<std::pair<std::string, std::string>, std::size_t> best_on_line;
  for (std::size_t i = 0; i < hits.size(); ++i) {
    const auto key = std::make_pair(hits[i].first.second, hits[i].second.first_reference);
    const auto [found, added] = best_on_line.emplace(key, i);
    if (!added && hits[i].second.strength < hits[found->second].second.strength) found->second = i;
  }
  for (std::size_t i = 0; i < hits.size(); ++i) {
    const auto& [key, hit] = hits[i];
    const Signature& signature = catalog.signatures[key.first];
    Building& building = causes[key.second];
    const bool counted = best_on_line.at(std::make_pair(key.second, hit.first_reference)) == i;
    building.candidate.cause = key.second;
    if (counted) building.candidate.score += weight(hit.strength);
    building.candidate.matches += hit.count;
    building.decisive = building.decisive || hit.strength == Strength::kDecisive;
    if (hit.strength != Strength::kSuggestive) {
      building.firm = true;
      building.only_kills = building.only_kills && hit.sigkill;
    } else {
      building.group_pids = std::max(building.group_pids, hit.max_pids);
    }
    building.first_order = std::min(building.first_order, hit.first_order);
    building.candidate.signatures.push_back(signature.id);
    // A line that a stronger signature of the same cause already counted adds its id, not
    // another step of reasoning or another set of remedies.
    if (!counted) continue;
    if (hit.meaning) {  // what the reported signal means: its explanation and remedies
      const std::string& meaning = catalog.signatures[*hit.meaning].id;
      auto& ids = building.candidate.signatures;
      if (std::find(ids.begin(), ids.end(), meaning) == ids.end()) ids.push_back(meaning);
    }
    building.candidate.reasoning.push_back(
        fmt::format("{}{} ({}, {}): {}{}", hit.first_reference,
                    hit.count > 1 ? fmt::format(" and {} more", hit.count - 1) : "", signature.id,
                    to_string(hit.strength),
                    first_sentence(hit.meaning ? catalog.signatures[*hit.meaning].explanation
                                               : signature.explanation),
                    hit.how_located.empty() ? "" : fmt::format(" Where: {}.", hit.how_located)));
  }

  // A process the job saw die of SIGKILL, whose pid a kernel or userspace OOM killer named.
  std::set<std::int64_t> correlated;
  for (const auto& [pid, signal] : observations.signalled_pids) {
    if (!is_kill_signal(signal)) continue;
    for (const auto& [killed, reference] : observations.killed_pids) {
      if (killed != pid || !correlated.insert(pid).second) continue;
      Building& building = causes["host_oom"];
      building.candidate.cause = "host_oom";
      building.candidate.score += kDecisive;
      building.decisive = true;
      building.candidate.reasoning.push_back(fmt::format(
          "pid {} died of SIGKILL and {} shows the OOM killer killed that same pid: the host or "
          "cgroup ran out of memory.",
          pid, reference));
    }
  }
  const bool killed_by_sigkill =
      std::any_of(observations.signalled_pids.begin(), observations.signalled_pids.end(),
                  [](const auto& item) { return is_kill_signal(item.second); });
  if (correlated.empty() && killed_by_sigkill && !observations.killed_pids.empty()) {
    Building& building = causes["host_oom"];
    building.candidate.score += kStrong;
    building.candidate.reasoning.push_back(
        "a process died of SIGKILL and the log also has OOM-killer lines, though for other pids "
        "(a container's pid namespace renumbers pids).");
  }

  // How the job ended, when the caller saw it (headroom run).
  const int exit_code = observations.exit_code.value_or(0);
  const int signal = observations.signal.value_or(0);
  const auto add_exit = [&](const std::string& cause, const std::string& why) {
    Building& building = causes[cause];
    building.candidate.cause = cause;
    building.candidate.score += kStrong;
    building.first_order = std::min(building.first_order, ~std::uint64_t{0} - 1);
    building.candidate.reasoning.push_back(why);
  };
  if (signal == 9 || exit_code == 137) {
    add_exit("host_oom",
             "the job ended by SIGKILL (exit status 137), the signal of the kernel OOM killer.");
  } else if (signal == 7 || exit_code == 135) {
    add_exit("shm_too_small",
             "the job ended by SIGBUS (exit status 135), what touching a page of a full /dev/shm "
             "raises.");
  }

  weigh_together(causes);
  // Lines that make a cause doubtful.
  for (const auto& [key, hit] : hits) {
    const Signature& signature = catalog.signatures[key.first];
    if (signature.contradicts.empty()) continue;
    auto found = causes.find(signature.contradicts);
    if (found == causes.end()) continue;
    Building& doubted = found->second;
    doubted.candidate.score /= 2;
    doubted.decisive = false;
    doubted.candidate.reasoning.push_back(fmt::format("but {} ({}) makes it doubtful: {}",
                                                      hit.first_reference, signature.id,
                                                      first_sentence(signature.explanation)));
  }

  Diagnosis diagnosis;
  std::vector<Building> ranked;
  for (auto& [cause, building] : causes) {
    building.candidate.cause = cause;
    // Repetition adds a little, never enough to beat a stronger signature.
    building.candidate.score +=
        std::min<double>(static_cast<double>(building.candidate.matches), 50) * 0.01;
    // High only when a line names the cause by itself (or a record proves it): several
    // lines that each only make it likely stay medium.
    const double score = building.candidate.score;
    building.candidate.confidence = building.decisive  ? Confidence::kHigh
                                    : score >= kStrong ? Confidence::kMedium
                                                       : Confidence::kLow;
    ranked.push_back(std::move(building));
  }
  std::sort(ranked.begin(), ranked.end(), [](const Building& a, const Building& b) {
    if (a.candidate.score != b.candidate.score) return a.candidate.score > b.candidate.score;
    return a.first_order < b.first_order;
  });
  lead_past_wrappers(ranked);
  failure_before_stop(ranked);
  if (ranked.size() > 1 && ranked[0].candidate.confidence == Confidence::kHigh &&
      ranked[1].candidate.confidence == Confidence::kHigh &&
      ranked[1].candidate.score * 2 > ranked[0].candidate.score) {
    ranked[0].candidate.confidence = Confidence::kMedium;
    ranked[0].candidate.reasoning.push_back(
        fmt::format("other lines point as strongly to {}: both are listed; the host checks can "
                    "tell them apart.",
                    ranked[1].candidate.cause));
  }
  for (Building& building : ranked) diagnosis.candidates.push_back(std::move(building.candidate));

  if (const Candidate* verdict = diagnosis.verdict()) {
    // A suggestive signature's remedies are what to look at next; once a
    // stronger line names the cause they would only distract.
    const auto is_firm = [&](const std::string& id) {
      return std::any_of(catalog.signatures.begin(), catalog.signatures.end(),
                         [&](const Signature& signature) {
                           return signature.id == id && signature.strength != Strength::kSuggestive;
                         });
    };
    const bool firm = std::any_of(verdict->signatures.begin(), verdict->signatures.end(), is_firm);
    for (const std::string& id : verdict->signatures) {
      for (const Signature& signature : catalog.signatures) {
        if (signature.id != id) continue;
        if (firm && signature.strength == Strength::kSuggestive) continue;
        if (!signature.explanation.empty() &&
            std::find(diagnosis.explanations.begin(), diagnosis.explanations.end(),
                      signature.explanation) == diagnosis.explanations.end()) {
          diagnosis.explanations.push_back(signature.explanation);
        }
        for (const std::string& remedy : signature.remedies) {
          if (std::find(diagnosis.remedies.begin(), diagnosis.remedies.end(), remedy) ==
              diagnosis.remedies.end()) {
            diagnosis.remedies.push_back(remedy);
          }
        }
      }
    }
  }
  diagnosis.evidence = std::move(observations.evidence);
  diagnosis.fields = std::move(observations.fields);
  diagnosis.lines = observations.lines;
  diagnosis.bytes = observations.bytes;
  diagnosis.exit_code = observations.exit_code;
  diagnosis.signal = observations.signal;
  return diagnosis;
}

std::string_view to_string(Confidence confidence) {
  switch (confidence) {
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  return "low";
}

}  // namespace headroom
