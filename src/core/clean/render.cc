#include "core/clean/render.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text_out.h"
#include "core/units.h"

namespace headroom {

namespace {

nlohmann::ordered_json item_json(const CleanItem& item) {
  nlohmann::ordered_json out;
  out["kind"] = std::string(to_string(item.kind));
  out["path"] = item.path.string();
  out["bytes"] = item.bytes;
  if (item.kind == CleanKind::kTmpDir) out["files"] = item.files;
  out["age_seconds"] = item.age.count();
  out["owner"] = item.owner;
  out["uid"] = item.uid;
  out["why_safe"] = item.why_safe;
  return out;
}

nlohmann::ordered_json items_json(const std::vector<CleanItem>& items) {
  auto out = nlohmann::ordered_json::array();
  for (const CleanItem& item : items) out.push_back(item_json(item));
  return out;
}

nlohmann::ordered_json kept_json(const std::vector<KeptItem>& kept) {
  auto out = nlohmann::ordered_json::array();
  for (const KeptItem& item : kept) {
    out.push_back({{"path", item.path.string()}, {"reason", item.reason}, {"bytes", item.bytes}});
  }
  return out;
}

std::string items_text(const std::vector<CleanItem>& items) {
  std::string out;
  for (const CleanItem& item : items) {
    out += fmt::format(
        "  {:>10}  {:>8}  {:<10} {}{}\n      {}\n", format_bytes(item.bytes),
        format_duration(item.age), item.owner, printable(item.path.string()),
        item.kind == CleanKind::kTmpDir ? fmt::format("/ ({} entries)", item.files) : "",
        printable(item.why_safe));
  }
  return out;
}

// Why some entries could not be proven unused, and the two ways forward.
std::string visibility_text(const CleanPlan& plan) {
  if (plan.blocking_pids.empty() && plan.visibility_note.empty()) return "";
  std::string out = "Kept because not every process could be seen: " + plan.visibility_note + "\n";
  if (!plan.blocking_pids.empty()) {
    std::string pids;
    for (int pid : plan.blocking_pids) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    out += "  run as root, or if you are sure they use nothing there: --ignore-unreadable " + pids +
           "\n";
  }
  return out;
}

std::string kept_text(const std::vector<KeptItem>& kept, bool verbose, std::string_view verb) {
  if (kept.empty()) return "";
  std::string out = fmt::format("{} {} item{}:\n", verb, kept.size(), kept.size() == 1 ? "" : "s");
  const std::size_t shown = verbose ? kept.size() : std::min<std::size_t>(kept.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    out += fmt::format("  {}: {}\n", printable(kept[i].path.string()), printable(kept[i].reason));
  }
  if (shown < kept.size())
    out += fmt::format("  ... {} more (-v shows all)\n", kept.size() - shown);
  return out;
}

}  // namespace

std::filesystem::path default_audit_log(const Context& context) {
  if (context.syscalls->effective_uid() == 0) return "/var/log/headroom/clean.log";
  if (auto state = context.env("XDG_STATE_HOME"))
    return std::filesystem::path(*state) / "headroom/clean.log";
  if (auto home = context.env("HOME"))
    return std::filesystem::path(*home) / ".local/state/headroom/clean.log";
  return "";
}

nlohmann::ordered_json clean_plan_to_json(const CleanPlan& plan) {
  nlohmann::ordered_json out;
  out["mode"] = "plan";
  out["items"] = items_json(plan.items);
  out["total_bytes"] = plan.total_bytes;
  out["kept"] = kept_json(plan.kept);
  out["processes_scanned"] = plan.processes_scanned;
  out["unreadable_pids"] = plan.unreadable_pids;
  out["blocking_pids"] = plan.blocking_pids;
  out["visibility_note"] = plan.visibility_note;
  return out;
}

nlohmann::ordered_json clean_result_to_json(const CleanResult& result, const CleanPlan& plan,
                                            const CleanOptions& options) {
  nlohmann::ordered_json out;
  out["mode"] = "apply";
  out["removed"] = items_json(result.removed);
  out["freed_bytes"] = result.freed_bytes;
  out["skipped"] = kept_json(result.skipped);
  out["kept"] = kept_json(plan.kept);
  out["audit_log"] = options.audit_log.string();
  out["audit_errors"] = result.audit_errors;
  out["blocking_pids"] = plan.blocking_pids;
  out["visibility_note"] = plan.visibility_note;
  out["interrupted"] = result.interrupted;
  return out;
}

std::string render_clean_plan(const CleanPlan& plan, bool verbose) {
  return fmt::format("Would free {} in {} item{}{}\n", format_bytes(plan.total_bytes),
                     plan.items.size(), plan.items.size() == 1 ? "" : "s",
                     plan.items.empty() ? "" : " (run again with --yes to remove):") +
         items_text(plan.items) + kept_text(plan.kept, verbose, "Keeping") + visibility_text(plan);
}

std::string render_clean_result(const CleanResult& result, const CleanPlan& plan,
                                const CleanOptions& options) {
  std::string out;
  if (result.interrupted) {
    out += "Interrupted: finished the items under way, left the rest untouched\n";
  }
  out += fmt::format("Freed {}: removed {} item{}, skipped {}\n", format_bytes(result.freed_bytes),
                     result.removed.size(), result.removed.size() == 1 ? "" : "s",
                     result.skipped.size());
  out += items_text(result.removed);
  out += kept_text(result.skipped, true, "Skipped at the re-check");
  out += visibility_text(plan);
  if (!result.removed.empty() && !options.audit_log.empty()) {
    out += "audit log: " + options.audit_log.string() + "\n";
  }
  return out;
}

}  // namespace headroom
