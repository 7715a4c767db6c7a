#include "core/prune/retention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

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
  if (checkpoint.parsed.best_or_last) reasons.push_back("name marks it best/last");
  if (!checkpoint.named_by.empty()) reasons.push_back(checkpoint.named_by);
  return reasons;
}

bool complete(const Checkpoint& checkpoint) {
  return !checkpoint.growing && !checkpoint.parsed.temporary && checkpoint.holders.empty();
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

Result<RetentionPlan> plan_retention(const std::vector<Checkpoint>& checkpoints,
                                     const RetentionPolicy& policy) {
  RetentionPlan plan;
  std::vector<std::size_t> series;
  std::vector<std::size_t> extras;  // unnumbered names beside a numbered series
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    (checkpoints[i].parsed.order() ? series : extras).push_back(i);
  }
  const auto by_mtime = [&](std::size_t a, std::size_t b) {
    const auto& ta = checkpoints[a].tally;
    const auto& tb = checkpoints[b].tally;
    if (ta.newest_mtime_ns != tb.newest_mtime_ns) return ta.newest_mtime_ns < tb.newest_mtime_ns;
    return checkpoints[a].name < checkpoints[b].name;
  };
  if (series.empty()) {
    series.swap(extras);
    std::sort(series.begin(), series.end(), by_mtime);
    plan.ordered_by = "modification time";
  } else {
    // Step numbers order the series (numerically: checkpoint-900 < checkpoint-1000);
    // the newest mtime only breaks ties between equal numbers.
    std::sort(series.begin(), series.end(), [&](std::size_t a, std::size_t b) {
      const auto na = *checkpoints[a].parsed.order();
      const auto nb = *checkpoints[b].parsed.order();
      return na != nb ? na < nb : by_mtime(a, b);
    });
    plan.ordered_by = "step number";
  }

  std::set<std::size_t> best;
  if (policy.keep_best > 0) {
    auto metric = resolve_metric(checkpoints, series, policy.metric);
    if (!metric) return fail(metric.error());
    plan.metric = *metric;
    plan.mode = policy.mode != MetricMode::kAuto ? policy.mode : guess_metric_mode(plan.metric);
    if (plan.mode == MetricMode::kAuto) {
      return fail(Error::invalid(fmt::format(
          "cannot tell whether a higher or lower '{}' is better: pass --mode min or --mode max",
          plan.metric)));
    }
    best = best_of(checkpoints, series, plan.metric, plan.mode, policy.keep_best);
  }

  // Walk from the newest: the first complete one is "the newest complete
  // checkpoint"; the first keep_last complete ones are kept.
  std::set<std::size_t> newest;
  std::optional<std::size_t> newest_complete;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    if (!complete(checkpoints[*it])) continue;
    if (!newest_complete) newest_complete = *it;
    if (newest.size() < policy.keep_last) newest.insert(*it);
  }

  for (std::size_t index : series) {
    const Checkpoint& checkpoint = checkpoints[index];
    PlannedCheckpoint item{index, Decision::kKeep, protections(checkpoint)};
    if (newest_complete == index)
      item.reasons.insert(item.reasons.begin(), "newest complete checkpoint");
    if (newest.count(index) > 0) {
      item.reasons.push_back(
          fmt::format("one of the {} newest (--keep-last {})", policy.keep_last, policy.keep_last));
    }
    if (best.count(index) > 0) {
      item.reasons.push_back(fmt::format("one of the {} best by {} = {} (--keep-best)",
                                         policy.keep_best, plan.metric,
                                         *checkpoint.parsed.metric(plan.metric)));
    }
    const auto order = checkpoint.parsed.order();
    if (policy.keep_every > 0 && order && *order % policy.keep_every == 0) {
      item.reasons.push_back(
          fmt::format("step {} is a multiple of {} (--keep-every)", *order, policy.keep_every));
    }
    if (item.reasons.empty()) {
      item.decision = Decision::kDelete;
      item.reasons.push_back(
          order ? fmt::format("older than the {} newest (step {})", policy.keep_last, *order)
                : fmt::format("older than the {} newest (by mtime)", policy.keep_last));
      if (policy.keep_best > 0)
        item.reasons.push_back(
            fmt::format("not among the {} best by {}", policy.keep_best, plan.metric));
      plan.delete_bytes += checkpoint.tally.disk_bytes;
      ++plan.deletions;
    }
    plan.items.push_back(std::move(item));
  }
  for (std::size_t index : extras) {
    PlannedCheckpoint item{index, Decision::kKeep, protections(checkpoints[index])};
    item.reasons.push_back(
        "no step number in its name while others have one: not part of the series");
    plan.items.push_back(std::move(item));
  }
  return plan;
}

}  // namespace headroom
