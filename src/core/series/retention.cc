#include "core/series/retention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

#include "core/series/completeness.h"

namespace headroom {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Reasons that protect a checkpoint whatever the policy says.
std::vector<std::string> protections(const Checkpoint& checkpoint) {
  std::vector<std::string> reasons;
  if (checkpoint.growing)
    reasons.push_back("still being written: size or mtime changed while measured");
  if (checkpoint.parsed.temporary) reasons.push_back("temporary name: a save in progress");
  for (const CheckpointHolder& holder : checkpoint.holders) {
    reasons.push_back(fmt::format("in use by {}[{}] ({}, {})", holder.command, holder.pid,
                                  holder.user, holder.how));
  }
  if (!checkpoint.named_by.empty()) reasons.push_back(checkpoint.named_by);
  return reasons;
}

/// Nothing is writing it: not growing, no temporary name, held by nobody.
bool settled(const Checkpoint& checkpoint) {
  return !checkpoint.growing && !checkpoint.parsed.temporary && checkpoint.holders.empty();
}

/// "best"/"last" in a name marks one checkpoint, unless the whole series is called so
/// ("model_best_{N}.pt": every member has the word, so it marks none of them).
bool marked_best_or_last(const Checkpoint& checkpoint, const std::string& series_name,
                         std::size_t members) {
  if (!checkpoint.parsed.best_or_last) return false;
  if (members == 1) return true;
  std::string lowered = series_name;
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lowered.find("best") == std::string::npos && lowered.find("last") == std::string::npos;
}

PlannedCheckpoint plan_temp(const std::vector<Checkpoint>& checkpoints, std::size_t index) {
  const Checkpoint& temp = checkpoints[index];
  PlannedCheckpoint item{index, Decision::kKeep, {}, kNoSeries, false, "a save temp", true};
  if (temp.writer == WriterState::kGone && !temp.growing) {
    item.decision = Decision::kDelete;
    item.reasons.push_back(fmt::format(
        "temp file of a save of {} that died: its writer (pid {}) is gone and nobody has it open",
        temp.temp.target, temp.temp.pid));
    return item;
  }
  item.reasons = protections(temp);
  if (temp.writer == WriterState::kAlive) {
    item.reasons.push_back(
        fmt::format("save of {} in progress (writer pid {})", temp.temp.target, temp.temp.pid));
  } else if (temp.writer == WriterState::kUnknown) {
    item.reasons.push_back(fmt::format(
        "temp file of a save of {}: its writer (pid {}) is not visible here, but not every "
        "process could be inspected",
        temp.temp.target, temp.temp.pid));
  }
  return item;
}

Result<std::string> resolve_metric(const std::vector<Checkpoint>& checkpoints,
                                   const std::vector<std::size_t>& series,
                                   const std::string& wanted) {
  std::set<std::string> names;
  for (std::size_t index : series) {
    for (const auto& [name, value] : checkpoints[index].parsed.metrics) names.insert(name);
  }
  if (!wanted.empty()) {
    if (names.count(wanted) == 0) {
      return fail(Error::invalid(
          fmt::format("no checkpoint name carries the metric '{}' (found: {})", wanted,
                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")))));
    }
    return wanted;
  }
  if (names.empty()) {
    return fail(Error::invalid(
        "--keep-best needs a metric in the names, e.g. 'epoch=3-val_loss=0.123.ckpt'; none found"));
  }
  if (names.size() > 1) {
    return fail(Error::invalid(fmt::format(
        "names carry several metrics ({}): choose one with --metric", fmt::join(names, ", "))));
  }
  return *names.begin();
}

/// The `count` best checkpoints of `series` by `metric`; ties favour the newer.
std::set<std::size_t> best_of(const std::vector<Checkpoint>& checkpoints,
                              const std::vector<std::size_t>& series, const std::string& metric,
                              MetricMode mode, std::size_t count) {
  std::vector<std::pair<double, std::size_t>> scored;  // (value, position in series)
  for (std::size_t position = 0; position < series.size(); ++position) {
    if (auto value = checkpoints[series[position]].parsed.metric(metric))
      scored.emplace_back(*value, position);
  }
  std::sort(scored.begin(), scored.end(), [mode](const auto& a, const auto& b) {
    if (a.first != b.first) return mode == MetricMode::kMin ? a.first < b.first : a.first > b.first;
    return a.second > b.second;
  });
  std::set<std::size_t> best;
  for (std::size_t i = 0; i < scored.size() && i < count; ++i)
    best.insert(series[scored[i].second]);
  return best;
}

}  // namespace

MetricMode guess_metric_mode(std::string_view metric) {
  static constexpr std::array<std::string_view, 9> kLower = {
      "loss", "err", "perplexity", "ppl", "wer", "cer", "mse", "mae", "rmse"};
  static constexpr std::array<std::string_view, 13> kHigher = {
      "acc",    "f1",  "score", "bleu",  "auc",    "map", "precision",
      "recall", "iou", "dice",  "rouge", "reward", "top1"};
  const std::string name = lower(metric);
  for (std::string_view word : kLower) {
    if (name.find(word) != std::string::npos) return MetricMode::kMin;
  }
  for (std::string_view word : kHigher) {
    if (name.find(word) != std::string::npos) return MetricMode::kMax;
  }
  return MetricMode::kAuto;
}

namespace {

/// Plans one series (indices into `checkpoints`, any order) into `plan`.
void plan_series(const std::vector<Checkpoint>& checkpoints, std::vector<std::size_t> series,
                 const std::string& name, const RetentionPolicy& policy, const std::string& metric,
                 MetricMode mode, RetentionPlan& plan) {
  SeriesPlan summary{name, "", series.size(), std::nullopt};
  const auto by_mtime = [&](std::size_t a, std::size_t b) {
    const auto& ta = checkpoints[a].tally;
    const auto& tb = checkpoints[b].tally;
    if (ta.newest_mtime_ns != tb.newest_mtime_ns) return ta.newest_mtime_ns < tb.newest_mtime_ns;
    return checkpoints[a].name < checkpoints[b].name;
  };
  // The checkpoint just written goes last: it is the newest whatever its number.
  const auto just_saved = std::stable_partition(
      series.begin(), series.end(),
      [&](std::size_t index) { return checkpoints[index].name != policy.just_saved; });
  const auto others = static_cast<std::ptrdiff_t>(just_saved - series.begin());
  const bool numbered = std::all_of(series.begin(), series.end(), [&](std::size_t index) {
    return checkpoints[index].parsed.order().has_value();
  });
  if (numbered) {
    // Step numbers order the series (numerically: checkpoint-900 < checkpoint-1000);
    // the newest mtime only breaks ties between equal numbers.
    std::sort(series.begin(), series.begin() + others, [&](std::size_t a, std::size_t b) {
      const auto na = *checkpoints[a].parsed.order();
      const auto nb = *checkpoints[b].parsed.order();
      return na != nb ? na < nb : by_mtime(a, b);
    });
    summary.ordered_by = "step number";
  } else {
    std::sort(series.begin(), series.begin() + others, by_mtime);
    summary.ordered_by = "modification time";
  }
  const std::vector<std::string> lacking = judge_completeness(checkpoints, series);
  std::vector<bool> complete(series.size());
  for (std::size_t i = 0; i < series.size(); ++i) {
    complete[i] = settled(checkpoints[series[i]]) && lacking[i].empty();
  }

  std::set<std::size_t> best;
  if (policy.keep_best > 0 && !metric.empty())
    best = best_of(checkpoints, series, metric, mode, policy.keep_best);

  // Walk from the newest: the first complete one is "the newest complete
  // checkpoint"; the first keep_last complete ones are kept.
  std::set<std::size_t> newest;
  std::optional<std::size_t> newest_position;
  for (std::size_t i = series.size(); i-- > 0;) {
    if (!complete[i]) continue;
    if (!newest_position) newest_position = i;
    if (newest.size() < policy.keep_last) newest.insert(series[i]);
  }
  if (newest_position) summary.newest_complete = series[*newest_position];

  const std::size_t series_index = plan.series.size();
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::size_t index = series[i];
    const Checkpoint& checkpoint = checkpoints[index];
    PlannedCheckpoint item{
        index, Decision::kKeep, protections(checkpoint), series_index, complete[i], "", false};
    if (!complete[i]) {
      item.incomplete = !lacking[i].empty()           ? lacking[i]
                        : checkpoint.growing          ? "still being written"
                        : checkpoint.parsed.temporary ? "a temporary name: a save in progress"
                                                      : "in use";
    }
    if (marked_best_or_last(checkpoint, name, series.size()))
      item.reasons.push_back("name marks it best/last");
    if (!lacking[i].empty() && (!newest_position || i > *newest_position)) {
      // A save that died (or one still going between two files): not counted, and
      // it pushes no complete checkpoint out; its removal is left to a person.
      item.reasons.push_back(fmt::format(
          "incomplete ({}), newer than every complete checkpoint of its series", lacking[i]));
    }
    if (best.count(index) > 0) {
      item.reasons.push_back(fmt::format("one of the {} best by {} = {} (--keep-best)",
                                         policy.keep_best, metric,
                                         *checkpoint.parsed.metric(metric)));
    }
    const auto order = checkpoint.parsed.order();
    if (policy.keep_every > 0 && order && *order % policy.keep_every == 0) {
      item.reasons.push_back(
          fmt::format("step {} is a multiple of {} (--keep-every)", *order, policy.keep_every));
    }
    // Everything so far keeps it whatever --keep-last says.
    item.pinned = !item.reasons.empty();
    if (newest_position == i)
      item.reasons.insert(item.reasons.begin(), "newest complete checkpoint");
    if (newest.count(index) > 0) {
      item.reasons.push_back(
          fmt::format("one of the {} newest (--keep-last {})", policy.keep_last, policy.keep_last));
    }
    if (item.reasons.empty()) {
      item.decision = Decision::kDelete;
      if (!lacking[i].empty()) item.reasons.push_back("incomplete: " + lacking[i]);
      item.reasons.push_back(
          order ? fmt::format("older than the {} newest (step {})", policy.keep_last, *order)
                : fmt::format("older than the {} newest (by mtime)", policy.keep_last));
      if (policy.keep_best > 0 && !metric.empty())
        item.reasons.push_back(
            fmt::format("not among the {} best by {}", policy.keep_best, metric));
      plan.delete_bytes += checkpoint.tally.disk_bytes;
      ++plan.deletions;
    }
    plan.items.push_back(std::move(item));
  }
  plan.series.push_back(std::move(summary));
}

}  // namespace

Result<RetentionPlan> plan_retention(const std::vector<Checkpoint>& checkpoints,
                                     const RetentionPolicy& policy) {
  RetentionPlan plan;
  std::map<std::string, std::vector<std::size_t>> groups;  // template -> members
  std::vector<std::size_t> temps;
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    const Checkpoint& checkpoint = checkpoints[i];
    if (checkpoint.kind == EntryKind::kSaveTemp) {
      temps.push_back(i);
      continue;
    }
    all.push_back(i);
    const std::string name =
        policy.one_series.empty()
            ? series_template(checkpoint.name, checkpoint.parsed, checkpoint.directory)
            : policy.one_series;
    groups[name].push_back(i);
  }

  if (policy.keep_best > 0) {
    auto metric = resolve_metric(checkpoints, all, policy.metric);
    if (!metric) return fail(metric.error());
    plan.metric = *metric;
    plan.mode = policy.mode != MetricMode::kAuto ? policy.mode : guess_metric_mode(plan.metric);
    if (plan.mode == MetricMode::kAuto) {
      return fail(Error::invalid(fmt::format(
          "cannot tell whether a higher or lower '{}' is better: pass --mode min or --mode max",
          plan.metric)));
    }
  }
  for (auto& [name, members] : groups) {
    plan_series(checkpoints, std::move(members), name, policy, plan.metric, plan.mode, plan);
  }
  plan.ordered_by = "step number";
  if (!plan.series.empty() &&
      std::none_of(plan.series.begin(), plan.series.end(),
                   [](const SeriesPlan& series) { return series.ordered_by == "step number"; })) {
    plan.ordered_by = "modification time";
  }
  for (std::size_t index : temps) {
    PlannedCheckpoint item = plan_temp(checkpoints, index);
    if (item.decision == Decision::kDelete) {
      plan.delete_bytes += checkpoints[index].tally.disk_bytes;
      ++plan.deletions;
    }
    plan.items.push_back(std::move(item));
  }
  return plan;
}

}  // namespace headroom
