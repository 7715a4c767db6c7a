#include "core/supervise/job_sampler.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "core/kernel/cgroup.h"
#include "core/signal_names.h"
#include "core/supervise/signal_free_thread.h"
#include "core/units.h"

namespace headroom {

namespace {

// Enough for the last lines of a traceback ending in "No space left on device".
constexpr std::size_t kStallTailBytes = 2048;

Context job_context(const Context& context, pid_t main_pid) {
  Context job = context;
  job.pid = std::to_string(main_pid);  // its mounts, cgroup and fds, not headroom's
  return job;
}

std::size_t timeline_capacity(const SupervisorOptions& options) {
  const auto interval = std::max<std::int64_t>(options.interval.count(), 1);
  return static_cast<std::size_t>(
      std::max<std::int64_t>(options.timeline_window.count() / interval, 8));
}

bool about_to_run_out(const AlertEvent& event) {
  return event.kind != AlertKind::kResolved && event.severity == Severity::kCritical &&
         (event.rule == "checkpoint_space" || event.rule == "filesystem_fill_eta" ||
          event.rule == "filesystem_usage");
}

}  // namespace

JobSampler::JobSampler(const Context& context, const SupervisorOptions& options,
                       const SupervisorHooks& hooks, pid_t main_pid, const OutputRing& output)
    : context_(context),
      options_(options),
      hooks_(hooks),
      main_pid_(main_pid),
      output_(output),
      timeline_(timeline_capacity(options)),
      output_moved_(std::chrono::system_clock::now()) {
  // The job was forked from headroom: it starts in headroom's cgroup.
  if (auto cgroup = read_memory_cgroup(context, "self")) {
    cgroup_peak_ = SupervisionResult::CgroupPeak{cgroup->path, cgroup->peak_bytes, std::nullopt};
  }
  watcher_ = std::make_unique<Watcher>(job_context(context, main_pid), options.watch);
  tree_ = std::make_unique<ProcessTreeSampler>(context, ::getpid(), main_pid);
  if (auto thread = start_signal_free_thread([this] { loop(); })) {
    thread_ = std::move(*thread);
  } else {
    // A task limit refused the thread, the job already running: it is supervised without
    // samples, and the post-mortem says none was taken.
    unreadable_.push_back(
        {"sampler", Error{Error::Code::kIo, "no thread to sample the job on (a task limit)"}});
  }
}

JobSampler::~JobSampler() {
  if (thread_.joinable()) {
    SupervisionResult ignored;
    stop(ignored);
  }
}

void JobSampler::loop() {
  auto next = std::chrono::steady_clock::now();
  // A job that dies in its first second must still have samples: start at 50 ms and
  // double up to the interval.
  auto step = std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50),
                                                            options_.interval);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    tick();
    lock.lock();
    next += step;
    step = std::min<std::chrono::steady_clock::duration>(step * 2, options_.interval);
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

void JobSampler::tick() {
  JobSample sample;
  auto step = watcher_->step();
  if (step) {
    for (const ProbeStatus& probe : step->sample.probes) {
      if (probe.error) {
        unreadable_.push_back({"probe " + probe.probe, *probe.error});
      }
    }
    for (const AlertEvent& event : step->events) {
      if (hooks_.on_alert) hooks_.on_alert(event);
      if (alerts_.size() < 256) alerts_.push_back(event);
    }
    check_on_critical(step->events);
    sample.host = std::move(step->sample);
  }
  sample.tree = tree_->sample();
  for (PartialFailure& failure : sample.tree.unreadable) unreadable_.push_back(std::move(failure));
  sample.tree.unreadable.clear();
  std::sort(unreadable_.begin(), unreadable_.end(),
            [](const PartialFailure& a, const PartialFailure& b) {
              return a.error.message < b.error.message;
            });
  unreadable_.erase(std::unique(unreadable_.begin(), unreadable_.end()), unreadable_.end());
  if (unreadable_.size() > 32) unreadable_.resize(32);
  timeline_.add(std::move(sample));
  check_stall();
}

void JobSampler::check_on_critical(const std::vector<AlertEvent>& events) {
  if (!options_.on_critical_signal || on_critical_) return;
  for (const AlertEvent& event : events) {
    if (!about_to_run_out(event)) continue;
    // Only the job's own dirs (--dir), not the temp dir or /dev/shm.
    const bool job_dir = std::any_of(
        options_.watch.sample.dirs.begin(), options_.watch.sample.dirs.end(),
        [&](const std::filesystem::path& dir) { return dir.string() == event.subject; });
    if (!job_dir) continue;
    ::kill(main_pid_, *options_.on_critical_signal);
    on_critical_ = fmt::format("{}: {}", event.rule, event.summary);
    if (hooks_.on_notice) {
      hooks_.on_notice(fmt::format("sent {} to the job (pid {}): {}",
                                   signal_name(*options_.on_critical_signal), main_pid_,
                                   event.summary));
    }
    return;
  }
}

void JobSampler::check_stall() {
  if (stall_) return;
  const auto now = std::chrono::system_clock::now();
  const std::uint64_t total = output_.total_bytes();
  if (total != output_seen_) {  // still talking: nothing to scan
    output_seen_ = total;
    output_moved_ = now;
    quiet_tail_enospc_.reset();
    return;
  }
  if (total == 0) return;
  std::string tail;
  if (!quiet_tail_enospc_) {
    tail = output_.last(kStallTailBytes);
    quiet_tail_enospc_ = mentions_enospc(tail);
  }
  if (!*quiet_tail_enospc_) return;
  const auto silent = now - output_moved_;
  if (silent < options_.stall_after) return;
  Stall stall;
  stall.last_output = output_moved_;
  stall.detected = now;
  stall.last_lines = tail.empty() ? output_.last(kStallTailBytes) : std::move(tail);
  stall_ = std::move(stall);
  if (hooks_.on_notice) {
    hooks_.on_notice(fmt::format(
        "the job looks stalled: no output for {} and its last output was a 'No space left on "
        "device' error",
        format_duration(std::chrono::duration_cast<std::chrono::seconds>(silent))));
  }
}

void JobSampler::stop(SupervisionResult& result) {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // One last look at the host now that the job has ended: the cgroup's OOM
  // counter moves when a worker is killed, often after the last tick. Through
  // headroom's own /proc view, so it is used only if the cgroup is the job's.
  if (auto final_sample = take_sample(context_, options_.watch.sample)) {
    result.final_host = std::move(*final_sample);
  }
  if (cgroup_peak_) {
    if (auto cgroup = read_memory_cgroup(context_, "self");
        cgroup && cgroup->path == cgroup_peak_->path)
      cgroup_peak_->at_end = cgroup->peak_bytes;
    result.cgroup_peak = std::move(cgroup_peak_);
  }
  result.processes = tree_->seen();
  result.timeline = std::move(timeline_);
  result.alerts = std::move(alerts_);
  result.on_critical = std::move(on_critical_);
  result.unreadable = std::move(unreadable_);
  if (stall_) {
    result.stall = std::move(stall_);
  }
}

}  // namespace headroom
