#include "core/postmortem/render.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include "core/alerts/rules.h"
#include "core/report/json.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom {

std::string render_postmortem(const Postmortem& postmortem, const TextStyle& style) {
  const std::string bold = style.color ? "\x1b[1;31m" : "";
  const std::string reset = color_reset(style);
  std::string out;
  out += fmt::format("{}headroom: the job failed: {}{} ({} confidence)\n", bold, postmortem.cause,
                     reset, postmortem.confidence);
  if (postmortem.process) {
    const Culprit& process = *postmortem.process;
    out += fmt::format("  process:  {} (pid {}{}) {}\n", process.role, process.pid,
                       process.name.empty() ? "" : ", " + process.name, process.fate);
  }
  if (!postmortem.resource.empty()) out += fmt::format("  resource: {}\n", postmortem.resource);
  if (!postmortem.evidence.empty()) {
    std::string line;
    for (const Evidence& evidence : postmortem.evidence) {
      if (!line.empty()) line += ", ";
      line += evidence.name + " " + format_value(evidence);
    }
    out += fmt::format("  measured: {}\n", line);
  }
  for (const std::string& line : postmortem.log_lines) out += fmt::format("  output:   {}\n", line);
  if (style.verbose) {
    for (const std::string& reason : postmortem.reasoning)
      out += fmt::format("  why:      {}\n", reason);
  }
  for (std::size_t i = 0; i < postmortem.fix.size(); ++i) {
    out += fmt::format("  {} {}\n", i == 0 ? "fix:     " : "         ", postmortem.fix[i]);
  }
  std::string others;
  for (const NamedExit& exit : postmortem.exits) {
    if (!exit.abnormal) continue;
    if (postmortem.process && exit.pid == postmortem.process->pid) continue;
    if (!others.empty()) others += "; ";
    others += fmt::format("{} (pid {}) {}", exit.role, exit.pid, exit.fate);
  }
  if (!others.empty()) out += fmt::format("  also:     {}\n", others);
  for (const std::string& blind : postmortem.could_not_see) {
    out += fmt::format("  not seen: {}\n", blind);
  }
  return out;
}

nlohmann::ordered_json postmortem_to_json(const Postmortem& postmortem,
                                          const SupervisionResult& run,
                                          const std::vector<std::string>& command) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["command"] = command;
  out["pid"] = run.main_pid;
  out["exit_code"] = run.exit_code;
  out["signal"] = WIFSIGNALED(run.wait_status)
                      ? ordered_json(signal_name(WTERMSIG(run.wait_status)))
                      : ordered_json(nullptr);
  out["failed"] = postmortem.needed && !postmortem.stopped;
  ordered_json verdict;
  verdict["cause"] = postmortem.needed ? ordered_json(postmortem.cause) : ordered_json(nullptr);
  verdict["confidence"] = postmortem.confidence;
  verdict["host_cause"] = postmortem.host_cause;
  verdict["summary"] = postmortem.summary;
  verdict["resource"] = postmortem.resource;
  out["verdict"] = verdict;
  if (postmortem.process) {
    const Culprit& process = *postmortem.process;
    out["process"] = {{"pid", process.pid},
                      {"role", process.role_id},
                      {"role_text", process.role},
                      {"name", process.name},
                      {"fate", process.fate}};
  } else {
    out["process"] = nullptr;
  }
  out["evidence"] = ordered_json::array();
  for (const Evidence& evidence : postmortem.evidence) out["evidence"].push_back(to_json(evidence));
  out["output_lines"] = postmortem.log_lines;
  out["reasoning"] = postmortem.reasoning;
  out["remedy"] = postmortem.fix;
  out["exits"] = ordered_json::array();
  for (const NamedExit& exit : postmortem.exits) {
    out["exits"].push_back(
        {{"pid", exit.pid}, {"role", exit.role}, {"fate", exit.fate}, {"abnormal", exit.abnormal}});
  }
  out["forwarded_signals"] = ordered_json::array();
  for (const ForwardedSignal& sent : run.forwarded) {
    out["forwarded_signals"].push_back(
        {{"signal", signal_name(sent.signal)}, {"to", sent.to_group ? "group" : "main"}});
  }
  out["stalled"] = run.stall.has_value();
  out["on_critical"] = run.on_critical ? ordered_json(*run.on_critical) : ordered_json(nullptr);
  out["output_bytes"] = run.output_bytes;
  if (run.log) {
    out["log"] = {{"written_bytes", run.log->written_bytes},
                  {"lost_bytes", run.log->lost_bytes},
                  {"rotations", run.log->rotations},
                  {"error", run.log->last_error}};
  } else {
    out["log"] = nullptr;
  }
  // What headroom's own stdout/stderr did not take (a reader that stopped reading).
  out["outputs"] = ordered_json::array();
  for (const auto& [name, stats] : run.outputs) {
    out["outputs"].push_back(
        {{"stream", name},
         {"written_bytes", stats.written_bytes},
         {"dropped_bytes", stats.dropped_bytes},
         {"longest_stall_seconds", std::chrono::duration<double>(stats.longest_stall).count()},
         {"reader_gone", stats.broken},
         {"gave_up", stats.abandoned},
         {"error", stats.error}});
  }
  out["samples"] = run.timeline.samples().size();
  out["left_running"] = run.left_running;
  out["could_not_see"] = postmortem.could_not_see;
  return out;
}

std::string run_to_json_line(const Postmortem& postmortem, const SupervisionResult& run,
                             const std::vector<std::string>& command, const Report* preflight) {
  nlohmann::ordered_json out;
  out["started"] = true;
  const nlohmann::ordered_json report = postmortem_to_json(postmortem, run, command);
  for (auto field = report.begin(); field != report.end(); ++field) out[field.key()] = *field;
  out["preflight"] = preflight != nullptr ? findings_to_json(*preflight) : nullptr;
  out["alerts"] = nlohmann::ordered_json::array();
  for (const AlertEvent& event : run.alerts) {
    if (event.kind == AlertKind::kResolved) continue;
    out["alerts"].push_back({{"rule", event.rule},
                             {"subject", event.subject},
                             {"severity", to_string(event.severity)},
                             {"summary", event.summary}});
  }
  return (run.stderr_line_open ? "\n" : "") + json_text(out) + "\n";
}

std::string render_output_notices(const SupervisionResult& run, const std::string& log_path) {
  std::string text;
  for (const auto& [name, stats] : run.outputs) {
    if (stats.dropped_bytes == 0 || stats.broken) continue;
    text += fmt::format(
        "headroom: {} of the job's output could not be written to headroom's {} (its reader "
        "stopped reading; the longest wait was {}) and {}\n",
        format_bytes(stats.dropped_bytes), name,
        format_duration(std::chrono::duration_cast<std::chrono::seconds>(stats.longest_stall)),
        log_path.empty() ? "was dropped (--log FILE keeps a complete copy)"
                         : "was dropped there; --log " + log_path + " has it");
  }
  if (run.log && run.log->lost_bytes > 0) {
    text +=
        fmt::format("headroom: --log lost {} of output ({})\n", format_bytes(run.log->lost_bytes),
                    run.log->last_error.empty() ? "the disk was too slow" : run.log->last_error);
  }
  return text;
}

}  // namespace headroom
