// headroom who PATH...: which processes hold files at or under each path
// (the question of `lsof +D` and `fuser`), including segments mapped after
// their fd was closed and files deleted while open. Exit: 0 holders found,
// 1 none, 2 usage error or /proc unreadable (like fuser).

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/inuse/inuse_index.h"
#include "core/operand.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

struct WhoCommand {
  std::vector<std::string> paths;
};

struct PathHolders {
  std::filesystem::path path;
  std::vector<const Holder*> holders;
};

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

void print_text(const InUseIndex& index, const std::vector<PathHolders>& results,
                const TextStyle& style, bool as_root) {
  for (const PathHolders& result : results) {
    std::vector<int> pids;
    for (const Holder* holder : result.holders) pids.push_back(holder->pid);
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    if (pids.empty()) {
      std::cout << fmt::format("{}: no process holds it\n", result.path.string());
      continue;
    }
    const std::string headline = fmt::format(
        "{}: held by {} process{} ({} file{})", result.path.string(), pids.size(),
        pids.size() == 1 ? "" : "es", result.holders.size(), result.holders.size() == 1 ? "" : "s");
    std::cout << (style.color ? "\033[1m" + headline + "\033[0m" : headline) << "\n";
    std::cout << fmt::format("  {:>7}  {:<10} {:<16} {:<7} {}\n", "PID", "USER", "COMMAND", "HOW",
                             "FILE");
    for (const Holder* holder : result.holders) {
      const ProcessInfo* process = index.process(holder->pid);
      std::cout << fmt::format(
          "  {:>7}  {:<10} {:<16} {:<7} {}{}\n", holder->pid,
          process != nullptr ? process->user : "?", process != nullptr ? process->command : "?",
          how_text(*holder), holder->original_path(),
          holder->deleted ? "  (deleted: still uses " + format_bytes(holder->size_bytes) + ")"
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
    std::cout << fmt::format(
        "note: {} process{} could not be inspected (permission denied: pid {}){}\n", pids.size(),
        pids.size() == 1 ? "" : "es", listed, as_root ? "" : ": run as root to see all");
  }
  if (index.hidepid()) std::cout << "note: /proc has hidepid: other users' processes are hidden\n";
}

}  // namespace

std::function<int()> setup_who(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<WhoCommand>();
  app.add_option("paths", command->paths, "files or directories (everything below is included)")
      ->required();
  app.footer(
      "Finds open fds, memory maps (also after the fd was closed), cwd, root and exe, and files "
      "deleted while in use.\nExit: 0 something holds a path, 1 nothing does, 2 error.");
  return [command, &globals]() {
    const Context context = make_context(globals);
    ScanOptions options;
    options.include_sysv = false;
    options.include_cmdline = globals.json;  // the text table shows the command name only
    std::vector<std::pair<std::filesystem::path, FileId>> targets;
    std::vector<Operand> operands;
    for (const std::string& text : command->paths) {
      auto operand = resolve_operand(context, text);
      if (!operand) return usage_error("who: " + operand.error().message);
      const std::filesystem::path& path = operand->path;
      auto id = file_id(context.root.host(path));
      if (!id) return usage_error(fmt::format("who {}: {}", text, std::strerror(errno)));
      targets.emplace_back(path, *id);
      options.path_prefixes.push_back(path);
      operands.push_back(std::move(*operand));
    }
    auto index = scan_in_use(context, options);
    if (!index) return usage_error(index.error().message);
    std::vector<PathHolders> results;
    bool any = false;
    for (const auto& [path, id] : targets) {
      results.push_back({path, index->holders_under(path, id)});
      any = any || !results.back().holders.empty();
    }
    if (globals.json) {
      nlohmann::ordered_json out;
      out["paths"] = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < results.size(); ++i) {
        const PathHolders& result = results[i];
        nlohmann::ordered_json entry;
        entry["path"] = result.path.string();
        entry["given_path"] = operands[i].given.string();
        entry["holders"] = nlohmann::ordered_json::array();
        for (const Holder* holder : result.holders) {
          entry["holders"].push_back(holder_json(*index, *holder));
        }
        out["paths"].push_back(entry);
      }
      out["processes_scanned"] = index->processes_scanned();
      out["unreadable_pids"] =
          std::vector<int>(index->unreadable_pids().begin(), index->unreadable_pids().end());
      out["hidepid"] = index->hidepid();
      std::cout << out.dump(2) << "\n";
    } else {
      print_text(*index, results, stdout_style(globals), context.syscalls->effective_uid() == 0);
      for (const Operand& operand : operands) {
        if (operand.followed()) std::cout << operand.note() << "\n";
      }
    }
    return any ? static_cast<int>(kExitOk) : static_cast<int>(kExitFindings);
  };
}

}  // namespace headroom::cli
