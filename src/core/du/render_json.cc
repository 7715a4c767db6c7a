// The JSON rendering of `headroom du` (docs/json.md, "headroom du --json").

#include "core/du/render.h"

namespace headroom {

namespace {

std::string_view kind_name(walk::FileKind kind) {
  switch (kind) {
    case walk::FileKind::kDirectory:
      return "directory";
    case walk::FileKind::kFile:
      return "file";
    case walk::FileKind::kSymlink:
      return "symlink";
    case walk::FileKind::kOther:
      return "other";
  }
  return "other";
}

nlohmann::ordered_json tally_json(const walk::Tally& tally, std::int64_t now_ns) {
  nlohmann::ordered_json json = {
      {"disk_bytes", tally.disk_bytes},
      {"apparent_bytes", tally.apparent_bytes},
      {"files", tally.files},
      {"directories", tally.directories},
  };
  if (tally.newest_mtime_ns > 0) {
    json["newest_mtime"] = tally.newest_mtime_ns / 1'000'000'000;
    json["newest_age_seconds"] =
        std::max<std::int64_t>(0, (now_ns - tally.newest_mtime_ns) / 1'000'000'000);
  } else {
    json["newest_mtime"] = nullptr;
    json["newest_age_seconds"] = nullptr;
  }
  return json;
}

}  // namespace

nlohmann::ordered_json du_to_json(const DuReport& report) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const DuEntry& entry : report.entries) {
    nlohmann::ordered_json holders = nlohmann::ordered_json::array();
    for (const DuHolder& holder : entry.holders) {
      holders.push_back({{"pid", holder.pid},
                         {"user", holder.user},
                         {"command", holder.command},
                         {"how", holder.how}});
    }
    nlohmann::ordered_json json = {{"name", entry.name},
                                   {"path", (report.path / entry.name).string()},
                                   {"type", kind_name(entry.kind)},
                                   {"owner", entry.owner},
                                   {"owner_uid", entry.owner_uid},
                                   {"mount_point", entry.mount_point}};
    json.update(tally_json(entry.tally, report.now_ns));
    json["in_use"] = entry.held_files > 0;
    json["held_files"] = entry.held_files;
    json["holders"] = holders;
    entries.push_back(std::move(json));
  }
  nlohmann::ordered_json other = {{"entries", report.other_count}};
  other.update(tally_json(report.other, report.now_ns));
  nlohmann::ordered_json unreadable_paths = nlohmann::ordered_json::array();
  for (const walk::WalkProblem& problem : report.problems) {
    unreadable_paths.push_back({{"path", problem.path}, {"reason", problem.reason}});
  }
  nlohmann::ordered_json json = {
      {"path", report.path.string()},
      {"size", report.size == walk::SizeKind::kDisk ? "disk" : "apparent"},
      {"one_file_system", report.mounts == walk::Mounts::kStayOnFilesystem},
      {"total", tally_json(report.total, report.now_ns)},
      {"entries", entries},
      {"other", other},
      {"unreadable", {{"count", report.unreadable}, {"paths", unreadable_paths}}},
      {"mounts_skipped", {{"count", report.mounts_skipped}, {"paths", report.skipped_mounts}}},
      {"hard_links_skipped", report.hard_links_skipped},
      {"vanished", report.vanished},
      {"in_use_checked", report.in_use_checked},
      {"in_use_note", report.in_use_note},
      {"threads", report.threads},
      {"elapsed_seconds", static_cast<double>(report.elapsed.count()) / 1000.0},
  };
  return json;
}

}  // namespace headroom
