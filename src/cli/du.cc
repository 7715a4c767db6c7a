// headroom du: the largest entries under a path, and who holds them.

#include "core/du/du.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "core/du/render.h"
#include "core/operand.h"
#include "core/text_out.h"
#include "core/threads.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

struct DuCommand {
  std::string path;
  std::size_t top = 20;
  bool apparent = false;
  bool cross_mounts = false;
  bool one_file_system = false;
  unsigned threads = 0;
  bool no_holders = false;
};

/// A "\r"-updated line on stderr while a long scan runs (terminal only): it
/// appears after half a second, is redrawn at most 10 times a second, and is
/// erased before the answer is printed.
class ProgressLine {
 public:
  explicit ProgressLine(const walk::WalkProgress& progress) : progress_(progress) {
    if (::isatty(STDERR_FILENO) != 1) return;
    // Under a task limit there is no thread for it: the scan runs without a progress line.
    if (auto thread = try_start_thread([this] { loop(); })) thread_ = std::move(*thread);
  }
  ~ProgressLine() { stop(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void stop() {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (drawn_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  void loop() {
    using namespace std::chrono_literals;
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, 500ms, [this] { return done_; })) return;
    while (!done_) {
      std::cerr << fmt::format("\r\033[Kscanning: {} entries, {} directories, {}",
                               format_count(progress_.entries.load()),
                               format_count(progress_.directories.load()),
                               format_bytes(progress_.disk_bytes.load()))
                << std::flush;
      drawn_ = true;
      wake_.wait_for(lock, 100ms, [this] { return done_; });
    }
  }

  const walk::WalkProgress& progress_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace

std::function<int()> setup_du(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<DuCommand>();
  app.add_option("path", command->path, "directory to examine (default: the current directory)");
  app.add_option("--top", command->top,
                 "list this many entries, largest first; 0: all (default 20)");
  app.add_flag("--apparent-size", command->apparent,
               "rank by file size (st_size), not blocks on disk");
  auto* cross = app.add_flag("--cross-mounts", command->cross_mounts,
                             "descend into other filesystems mounted below PATH");
  app.add_flag("-x,--one-file-system", command->one_file_system,
               "stay on PATH's filesystem (the default)")
      ->excludes(cross);
  app.add_option("--threads", command->threads,
                 "walker threads (default: 4 per CPU, 4..64: a cold-cache walk waits on the disk)")
      ->check(CLI::Range(1U, 256U));
  app.add_flag("--no-holders", command->no_holders,
               "do not scan /proc for processes holding files");
  return [command, &globals]() {
    const Context context = make_context(globals);
    DuOptions options;
    auto operand = resolve_operand(context, command->path);
    if (!operand) return usage_error(operand.error().message);
    options.path = operand->path;
    options.top = command->top;
    options.size = command->apparent ? walk::SizeKind::kApparent : walk::SizeKind::kDisk;
    options.mounts = command->cross_mounts ? walk::Mounts::kCross : walk::Mounts::kStayOnFilesystem;
    options.threads = command->threads;
    options.in_use = !command->no_holders;
    walk::WalkProgress progress;
    options.progress = &progress;
    ProgressLine line(progress);
    auto report = run_du(context, options);
    line.stop();
    if (!report) return usage_error(report.error().message);
    if (globals.json) {
      auto out = du_to_json(*report);
      out["given_path"] = operand->given.string();
      std::cout << json_text(out, 2) << "\n";
    } else {
      std::cout << render_du_text(*report, stdout_style(globals));
      if (operand->followed()) std::cout << operand->note() << "\n";
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace headroom::cli
