// pids.limit: will the job's processes and threads fit under every limit on
// the number of tasks? fork() and pthread_create() fail with EAGAIN at the
// first one reached: "BlockingIOError: [Errno 11] Resource temporarily
// unavailable" under os.fork, "RuntimeError: can't start new thread", OpenBLAS
// or OpenMP unable to create their pools.
//
// The estimate (docs/checks.md, "pids.limit"), in tasks (threads), per rank:
//   main process: T (its main thread and T - 1 OpenMP intra-op threads; T =
//                 OMP_NUM_THREADS, else the CPUs it may run on) + W index-queue
//                 feeder threads (one per worker) + 4 (pin-memory thread,
//                 autograd engine, CUDA driver / NCCL watchdog threads)
//   each worker:  3 (measured with torch 1.13: its main thread, its result
//                 queue's feeder thread and one more; torch sets 1 intra-op thread)
//   job = R x (T + W + 4 + 3 W) + 2 for a launcher (torchrun, mp.spawn) when R > 1.
// Measured: a CPU DataLoader with W = 8 and T = 2 needs 33 tasks (fails with
// "can't start new thread" at pids.max 31, hangs at 32); the estimate says 38.
// The limits, each with the room it leaves: RLIMIT_NPROC (counts every task of
// the user on the host; root is exempt), the pids cgroup (smallest pids.max -
// pids.current on the way up), kernel.threads-max and kernel.pid_max (against
// all tasks on the host).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/checks/check.h"
#include "core/kernel/kernel_tasks.h"
#include "core/kernel/limits.h"
#include "core/kernel/pids_cgroup.h"
#include "core/kernel/user_tasks.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::uint64_t kMainHelperThreads = 4;
constexpr std::uint64_t kWorkerThreads = 3;
constexpr std::uint64_t kLauncherTasks = 2;
// What the remedies raise a limit to, at least.
constexpr std::uint64_t kRecommended = 4096;

enum class BoundKind { kNproc, kCgroup, kThreadsMax, kPidMax };

/// One ceiling on the number of tasks, and what is already counted against it.
struct Bound {
  BoundKind kind;
  std::string name;       ///< "RLIMIT_NPROC of uid 1000", "pids.max of /sys/fs/cgroup/...", ...
  std::string directory;  ///< the pids cgroup's directory, for kCgroup
  std::uint64_t limit = 0;
  std::uint64_t used = 0;
  [[nodiscard]] std::uint64_t room() const { return limit > used ? limit - used : 0; }
};

struct Estimate {
  std::uint64_t intra_op = 1;
  std::string intra_op_source;
  std::uint64_t main_threads = 0;
  std::uint64_t total = 0;
};

std::optional<std::uint64_t> omp_threads(const Context& context) {
  const auto value = context.env("OMP_NUM_THREADS");
  if (!value) return std::nullopt;
  // "8" or a nested list "8,2": the outer level is the pool torch starts.
  std::uint64_t threads = 0;
  const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), threads);
  if (error != std::errc() || threads == 0) return std::nullopt;
  return threads;
}

Estimate estimate(const CheckInput& input, const std::optional<std::uint64_t>& cpus) {
  const CheckOptions& options = input.options;
  Estimate need;
  if (const auto omp = omp_threads(input.context)) {
    need.intra_op = *omp;
    need.intra_op_source = "OMP_NUM_THREADS";
  } else if (cpus) {
    need.intra_op = *cpus;
    need.intra_op_source = "Cpus_allowed_list";
  } else {
    need.intra_op_source = "unknown CPU count, assumed 1";
  }
  need.main_threads = need.intra_op + options.workers + kMainHelperThreads;
  need.total = options.ranks * (need.main_threads + kWorkerThreads * options.workers) +
               (options.ranks > 1 ? kLauncherTasks : 0);
  return need;
}

/// Reads every limit; those that cannot be read add a reason to `unreadable`.
std::vector<Bound> read_bounds(const CheckInput& input, const Result<UserTasks>& user,
                               Finding& finding, std::vector<std::string>& unreadable) {
  const Context& context = input.context;
  std::vector<Bound> bounds;
  auto rows = read_limits(context);
  const std::optional<Limit> nproc =
      rows ? find_limit(*rows, "Max processes") : std::optional<Limit>();
  if (!nproc) {
    unreadable.push_back(rows ? "no 'Max processes' row in limits" : rows.error().message);
  } else if (!user) {
    unreadable.push_back("RLIMIT_NPROC: " + user.error().message);
  } else {
    finding.add("nproc_soft_limit",
                nproc->soft == Limit::kUnlimited ? Evidence::Value(std::string("unlimited"))
                                                 : Evidence::Value(nproc->soft),
                "count");
    finding.add("uid", static_cast<std::uint64_t>(user->uid));
    if (user->uid == 0 && uid_is_host_root(context, user->uid)) {
      // kernel/fork.c: the host's root is not held to it; root of a user namespace is.
      finding.add("nproc_exempt", true);
    } else if (nproc->soft != Limit::kUnlimited) {
      // Only a limit that applies is worth a status read per pid on the host.
      auto counted = read_user_tasks(context);
      if (counted) {
        finding.add("user_tasks", counted->tasks, "count");
        bounds.push_back({BoundKind::kNproc, fmt::format("RLIMIT_NPROC of uid {}", user->uid), "",
                          nproc->soft, counted->tasks});
      } else {
        unreadable.push_back("RLIMIT_NPROC: " + counted.error().message);
      }
    }
  }
  auto cgroup = read_pids_cgroup(context, context.pid);
  if (!cgroup) {
    unreadable.push_back("pids cgroup: " + cgroup.error().message);
  } else {
    finding.add("pids_cgroup", cgroup->path);
    if (!cgroup->hierarchy_root) finding.add("pids_current", cgroup->current, "count");
    if (cgroup->limit) {
      const std::string where = context.root.display(cgroup->limit_directory).string();
      finding.add("pids_max", *cgroup->limit, "count");
      finding.add("pids_max_set_by", where);
      bounds.push_back({BoundKind::kCgroup, "pids.max of " + where, where, *cgroup->limit,
                        cgroup->limit_current});
    } else {
      finding.add("pids_max", std::string("max"));
    }
  }
  auto kernel = read_kernel_tasks(context);
  if (!kernel) {
    unreadable.push_back(kernel.error().message);
  } else {
    finding.add("host_tasks", kernel->tasks, "count");
    finding.add("threads_max", kernel->threads_max, "count");
    finding.add("pid_max", kernel->pid_max, "count");
    bounds.push_back(
        {BoundKind::kThreadsMax, "kernel.threads-max", "", kernel->threads_max, kernel->tasks});
    bounds.push_back({BoundKind::kPidMax, "kernel.pid_max", "", kernel->pid_max, kernel->tasks});
  }
  return bounds;
}

std::vector<std::string> remedies(const CheckInput& input, const Bound& bound,
                                  const Estimate& need) {
  std::vector<std::string> lines;
  const std::uint64_t target = std::max(kRecommended, bound.used + 2 * need.total);
  switch (bound.kind) {
    case BoundKind::kNproc:
      lines.push_back(fmt::format(
          "raise the user's process/thread limit: ulimit -u {0} in the shell that starts the job "
          "(up to the hard limit), '<user> - nproc {0}' in /etc/security/limits.conf (new login), "
          "or LimitNPROC={0} in the job's systemd unit",
          target));
      if (input.runtime.kind == RuntimeKind::kDocker ||
          input.runtime.kind == RuntimeKind::kPodman) {
        lines.push_back(fmt::format("docker run --ulimit nproc={0}:{0} ...", target));
      }
      break;
    case BoundKind::kCgroup:
      switch (input.runtime.kind) {
        case RuntimeKind::kDocker:
        case RuntimeKind::kPodman:
          lines.push_back(fmt::format("docker run --pids-limit {} ... (or -1 for none)", target));
          break;
        case RuntimeKind::kKubernetes:
          lines.push_back(fmt::format(
              "raise the kubelet's podPidsLimit (KubeletConfiguration podPidsLimit: {}, or "
              "--pod-max-pids) on the node pool that runs the job",
              target));
          break;
        default:
          lines.push_back(fmt::format(
              "raise the cgroup's limit: TasksMax={} (or infinity) in the job's systemd unit or "
              "slice, or echo {} > {}/pids.max",
              target, target, bound.directory));
          break;
      }
      break;
    case BoundKind::kThreadsMax:
      lines.push_back(fmt::format("sudo sysctl -w kernel.threads-max={}", 2 * bound.limit));
      break;
    case BoundKind::kPidMax:
      lines.emplace_back("sudo sysctl -w kernel.pid_max=4194304");
      break;
  }
  // Workers that fit the room left: per rank T + 4 + W x (1 feeder + 3 worker threads).
  const CheckOptions& options = input.options;
  const std::uint64_t launcher = options.ranks > 1 ? kLauncherTasks : 0;
  const std::uint64_t per_rank =
      bound.room() > launcher ? (bound.room() - launcher) / options.ranks : 0;
  const std::uint64_t fixed = need.intra_op + kMainHelperThreads;
  const std::string fitting = per_rank > fixed
                                  ? fmt::format("num_workers={} fits the room left",
                                                (per_rank - fixed) / (1 + kWorkerThreads))
                                  : std::string("not even num_workers=0 fits the room left");
  lines.push_back(fmt::format(
      "or start fewer tasks: {} (each worker costs {} tasks and a feeder thread in the main "
      "process); OMP_NUM_THREADS=1 saves {} per rank",
      fitting, kWorkerThreads, need.intra_op - 1));
  return lines;
}

}  // namespace

std::vector<Finding> check_pids_limit(const CheckInput& input) {
  const CheckOptions& options = input.options;
  Finding finding;
  finding.id = "pids.limit";
  finding.subject = "tasks";
  finding.why =
      "every process and every thread is one task; when a limit on tasks is reached fork() and "
      "pthread_create() fail with EAGAIN and the job dies with \"BlockingIOError: [Errno 11] "
      "Resource temporarily unavailable\" (DataLoader workers) or \"RuntimeError: can't start "
      "new thread\" (pin-memory and queue feeder threads), or OpenMP/OpenBLAS abort";
  // Who the job runs as; its tasks are counted in read_bounds, when RLIMIT_NPROC applies.
  const Result<UserTasks> user = read_user_tasks(input.context, false);
  const Estimate need = estimate(input, user ? user->cpus_allowed : std::optional<std::uint64_t>());
  finding.add("estimated_tasks", need.total, "count");
  finding.add("ranks", options.ranks, "count");
  finding.add("workers", options.workers, "count");
  finding.add("intra_op_threads", need.intra_op, "count");
  finding.add("intra_op_threads_source", need.intra_op_source);
  finding.add("main_process_threads", need.main_threads, "count");
  finding.add("worker_threads", kWorkerThreads, "count");
  std::vector<std::string> unreadable;
  const std::vector<Bound> bounds = read_bounds(input, user, finding, unreadable);
  std::string reasons;
  for (const std::string& reason : unreadable) reasons += (reasons.empty() ? "" : "; ") + reason;
  if (!reasons.empty()) finding.add("unreadable", reasons);
  if (bounds.empty()) {
    Finding unknown = unknown_finding("pids.limit", "tasks",
                                      reasons.empty() ? "no limit could be read" : reasons);
    unknown.evidence = std::move(finding.evidence);
    unknown.why = std::move(finding.why);
    return {std::move(unknown)};
  }
  const Bound& binding =
      *std::min_element(bounds.begin(), bounds.end(),
                        [](const Bound& a, const Bound& b) { return a.room() < b.room(); });
  finding.add("room_left", binding.room(), "count");
  finding.add("binding_limit", binding.name);
  const std::string estimate_text =
      fmt::format("the job needs about {} = {} x ({} main-process threads + {} x {}){}", need.total,
                  format_count(options.ranks, "rank"), need.main_threads,
                  format_count(options.workers, "worker"), kWorkerThreads,
                  options.ranks > 1 ? fmt::format(" + {} launcher", kLauncherTasks) : "");
  finding.summary =
      fmt::format("room for {} more tasks under {} ({} of {} in use); {}", binding.room(),
                  binding.name, binding.used, binding.limit, estimate_text);
  if (need.total > binding.room()) {
    finding.severity = Severity::kCritical;
  } else if (2 * need.total > binding.room()) {
    finding.severity = Severity::kWarn;
  }
  if (finding.severity != Severity::kOk) finding.remedy = remedies(input, binding, need);
  return {std::move(finding)};
}

}  // namespace headroom
