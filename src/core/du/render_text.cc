// The human rendering of `headroom du`: answer first (the total), then the
// largest entries, then anything that makes the numbers incomplete.

#include <fmt/format.h>

#include "core/du/render.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kBold = "\033[1m";
constexpr std::string_view kYellow = "\033[33m";
constexpr std::string_view kReset = "\033[0m";

std::string holders_text(const DuEntry& entry) {
  if (entry.held_files == 0) return "";
  if (entry.holders.empty()) return fmt::format("{} held", entry.held_files);
  const DuHolder& first = entry.holders.front();
  std::string text = fmt::format("{}[{}] {}", printable(first.command), first.pid, first.user);
  if (entry.holders.size() > 1) text += fmt::format(" +{}", entry.holders.size() - 1);
  return text;
}

std::string entry_name(const DuEntry& entry) {
  switch (entry.kind) {
    case walk::FileKind::kDirectory:
      return printable(entry.name) + "/";
    case walk::FileKind::kSymlink:
      return printable(entry.name) + "@";
    default:
      return printable(entry.name);
  }
}

std::string list_problems(const DuReport& report) {
  std::string text;
  for (const walk::WalkProblem& problem : report.problems) {
    text += fmt::format("  {}: {}\n", printable(problem.path), problem.reason);
  }
  if (report.unreadable > report.problems.size()) {
    text += fmt::format("  ... and {} more\n", report.unreadable - report.problems.size());
  }
  return text;
}

}  // namespace

std::string render_du_text(const DuReport& report, const TextStyle& style) {
  const walk::SizeKind size = report.size;
  const std::string_view measure = size == walk::SizeKind::kDisk ? "on disk" : "apparent size";
  std::string out = fmt::format(
      "{}: {} {} in {} files, {} directories ({:.1f}s, {} threads)\n",
      printable(report.path.string()), paint(style, kBold, format_bytes(report.total.bytes(size))),
      measure, format_count(report.total.files), format_count(report.total.directories),
      static_cast<double>(report.elapsed.count()) / 1000.0, report.threads);
  if (!report.entries.empty()) {
    out += "\n" +
           paint(style, kBold,
                 fmt::format("{:>10}  {:>10}  {:>8}  {:<10}  {:<24}  {}", "SIZE", "FILES", "NEWEST",
                             "OWNER", "IN USE BY", "NAME")) +
           "\n";
  }
  for (const DuEntry& entry : report.entries) {
    const std::string size_text =
        entry.mount_point ? "mount" : format_bytes(entry.tally.bytes(size));
    const std::string held = holders_text(entry);
    out += fmt::format(
        "{:>10}  {:>10}  {:>8}  {:<10}  {}  {}\n", size_text, format_count(entry.tally.files),
        format_age(report.now_ns, entry.tally.newest_mtime_ns), entry.owner,
        held.empty() ? std::string(24, ' ') : paint(style, kYellow, fmt::format("{:<24}", held)),
        entry_name(entry));
  }
  if (report.other_count > 0) {
    out += fmt::format("{:>10}  {:>10}  {:>8}  {:<10}  {:<24}  ({} more entries)\n",
                       format_bytes(report.other.bytes(size)), format_count(report.other.files),
                       format_age(report.now_ns, report.other.newest_mtime_ns), "", "",
                       format_count(report.other_count));
  }
  if (report.mounts_skipped > 0) {
    out +=
        fmt::format("\nNot entered: {} mount point(s) of other filesystems (use --cross-mounts):\n",
                    report.mounts_skipped);
    for (const std::string& path : report.skipped_mounts) {
      out += fmt::format("  {}\n", printable(path));
    }
  }
  if (report.unreadable > 0) {
    out += paint(style, kYellow,
                 fmt::format("\nUnreadable: {} path(s) not counted:\n", report.unreadable));
    out += list_problems(report);
  }
  if (report.hard_links_skipped > 0) {
    out += fmt::format(
        "\nHard links: {} extra name(s) of files already counted were not counted again.\n",
        format_count(report.hard_links_skipped));
  }
  if (!report.in_use_note.empty()) {
    out += fmt::format("\nIn use: {}\n", report.in_use_note);
  }
  return out;
}

}  // namespace headroom
