#include "core/inuse/render.h"

#include <fmt/format.h>
#include <sys/sysmacros.h>

#include "core/text_out.h"
#include "core/units.h"

namespace headroom {

namespace {

nlohmann::ordered_json holder_json(const InUseIndex& index, const Holder& holder) {
  nlohmann::ordered_json out;
  const ProcessInfo* process = index.process(holder.pid);
  out["pid"] = holder.pid;
  out["user"] = process != nullptr ? process->user : "";
  out["uid"] = process != nullptr ? process->uid : 0;
  out["command"] = process != nullptr ? process->command : "";
  out["cmdline"] = process != nullptr ? process->cmdline : "";
  out["how"] = std::string(to_string(holder.how));
  if (holder.how == HoldKind::kFd) out["fd"] = holder.fd;
  out["file"] = std::string(holder.original_path());
  out["deleted"] = holder.deleted;
  out["device"] = fmt::format("{}:{}", major(holder.file.device), minor(holder.file.device));
  out["inode"] = holder.file.inode;
  out["size_bytes"] = holder.size_bytes;
  return out;
}

std::string how_text(const Holder& holder) {
  if (holder.how == HoldKind::kFd) return fmt::format("fd {}", holder.fd);
  return std::string(to_string(holder.how));
}

}  // namespace

nlohmann::ordered_json who_to_json(const WhoAnswer& answer) {
  const InUseIndex& index = answer.index;
  nlohmann::ordered_json out;
  out["paths"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < answer.targets.size(); ++i) {
    nlohmann::ordered_json entry;
    entry["path"] = answer.targets[i].operand.path.string();
    entry["given_path"] = answer.targets[i].operand.given.string();
    entry["holders"] = nlohmann::ordered_json::array();
    for (const Holder* holder : answer.holders(i)) {
      entry["holders"].push_back(holder_json(index, *holder));
    }
    out["paths"].push_back(entry);
  }
  out["processes_scanned"] = index.processes_scanned();
  out["unreadable_pids"] =
      std::vector<int>(index.unreadable_pids().begin(), index.unreadable_pids().end());
  out["hidepid"] = index.hidepid();
  return out;
}

std::string render_who_text(const WhoAnswer& answer, const TextStyle& style, bool as_root) {
  const InUseIndex& index = answer.index;
  std::string out;
  for (std::size_t i = 0; i < answer.targets.size(); ++i) {
    const std::string path = printable(answer.targets[i].operand.path.string());
    const std::vector<const Holder*> holders = answer.holders(i);
    std::vector<int> pids;
    for (const Holder* holder : holders) pids.push_back(holder->pid);
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    if (pids.empty()) {
      out += fmt::format("{}: no process holds it\n", path);
      continue;
    }
    const std::string headline =
        fmt::format("{}: held by {} process{} ({} file{})", path, pids.size(),
                    pids.size() == 1 ? "" : "es", holders.size(), holders.size() == 1 ? "" : "s");
    out += (style.color ? "\033[1m" + headline + "\033[0m" : headline) + "\n";
    out +=
        fmt::format("  {:>7}  {:<10} {:<16} {:<7} {}\n", "PID", "USER", "COMMAND", "HOW", "FILE");
    for (const Holder* holder : holders) {
      const ProcessInfo* process = index.process(holder->pid);
      out += fmt::format("  {:>7}  {:<10} {:<16} {:<7} {}{}\n", holder->pid,
                         process != nullptr ? process->user : "?",
                         process != nullptr ? printable(process->command) : "?", how_text(*holder),
                         printable(holder->original_path()),
                         holder->deleted
                             ? "  (deleted: still uses " + format_bytes(holder->size_bytes) + ")"
                             : "");
    }
  }
  if (!index.unreadable_pids().empty()) {
    const auto pids = index.unreadable_pids();
    std::string listed;
    for (std::size_t i = 0; i < pids.size() && i < 10; ++i) {
      listed += (i == 0 ? "" : ",") + std::to_string(pids[i]);
    }
    if (pids.size() > 10) listed += ",...";
    out += fmt::format("note: {} process{} could not be inspected (permission denied: pid {}){}\n",
                       pids.size(), pids.size() == 1 ? "" : "es", listed,
                       as_root ? "" : ": run as root to see all");
  }
  if (index.hidepid()) out += "note: /proc has hidepid: other users' processes are hidden\n";
  for (const WhoTarget& target : answer.targets) {
    if (target.operand.followed()) out += printable(target.operand.note()) + "\n";
  }
  return out;
}

}  // namespace headroom
