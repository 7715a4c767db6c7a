// Tasks of one user over /proc; see user_tasks.h for the sources and quirks.
#include "core/kernel/user_tasks.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/kernel/proc_pid_status.h"
#include "core/kernel/text.h"
#include "core/threads.h"

namespace headroom {

namespace {

bool number(std::string_view text, std::uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

// /proc/<pid>/status is about 1.5 KiB; more only with thousands of supplementary groups.
constexpr std::size_t kStatusBuffer = 16384;

bool all_digits(std::string_view name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct Count {
  std::uint64_t tasks = 0;
  std::uint64_t processes = 0;
};

// Below this many pids a second thread costs more than it saves.
constexpr std::size_t kParallelMinimum = 64;
constexpr std::size_t kPidsPerClaim = 16;

// Adds `pid` to `count` when its real uid is `uid`: one openat relative to the /proc
// fd and one read into `buffer`, since status is produced whole (a read that fills
// the buffer, a huge Groups line, is read again whole). A pid that exited is skipped.
void count_pid(const Context& context, int proc_fd, pid_t pid, uid_t uid, std::vector<char>& buffer,
               Count& count) {
  std::array<char, 32> leaf{};
  const auto digits = std::to_chars(leaf.data(), leaf.data() + 16, pid).ptr;
  std::copy_n("/status", 8, digits);
  const int fd = ::openat(proc_fd, leaf.data(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  const ssize_t got = ::read(fd, buffer.data(), buffer.size());
  ::close(fd);
  if (got <= 0) return;
  const auto status =
      static_cast<std::size_t>(got) < buffer.size()
          ? parse_proc_status(std::string_view(buffer.data(), static_cast<std::size_t>(got)))
          : read_proc_status(context, pid);
  if (!status || status->uid != uid) return;  // another user
  count.tasks += std::max<std::uint64_t>(status->threads, 1);
  ++count.processes;
}

}  // namespace

Result<std::uint64_t> parse_cpu_list_count(std::string_view text) {
  text = trim_blanks(text);
  std::uint64_t count = 0;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(','), text.size());
    const std::string_view range = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t dash = range.find('-');
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    const bool parsed = dash == std::string_view::npos ? number(range, first) && number(range, last)
                                                       : number(range.substr(0, dash), first) &&
                                                             number(range.substr(dash + 1), last);
    if (!parsed || last < first) {
      return fail(Error::parse(fmt::format("cpu list: bad range '{}'", range)));
    }
    count += last - first + 1;
  }
  if (count == 0) return fail(Error::parse("cpu list: empty"));
  return count;
}

std::optional<std::string_view> status_field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && line.substr(0, colon) == key) {
      return trim_blanks(line.substr(colon + 1));
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> cpus_allowed(std::string_view status_text) {
  const auto list = status_field(status_text, "Cpus_allowed_list");
  if (!list) return std::nullopt;
  auto count = parse_cpu_list_count(*list);
  return count ? std::optional<std::uint64_t>(*count) : std::nullopt;
}

bool uid_is_host_root(const Context& context, uid_t uid) {
  auto text = context.root.read(context.process_file("uid_map"));
  if (!text) return uid == 0;  // no user namespaces here: every uid is the host's
  std::string_view rest = *text;
  while (!rest.empty()) {
    std::string_view line = next_line(rest);
    std::array<std::uint64_t, 3> field{};  // inside, outside, count
    for (std::uint64_t& value : field) {
      line = line.substr(std::min(line.find_first_not_of(" \t"), line.size()));
      const std::size_t end = std::min(line.find_first_of(" \t"), line.size());
      if (!number(line.substr(0, end), value)) return uid == 0;
      line.remove_prefix(end);
    }
    if (uid >= field[0] && uid - field[0] < field[2]) return field[1] + (uid - field[0]) == 0;
  }
  return false;  // unmapped: not root of anything above
}

Result<UserTasks> read_user_tasks(const Context& context, bool count_tasks) {
  const auto own_path = context.process_file("status");
  auto own_text = context.root.read(own_path);
  if (!own_text) return fail(own_text.error());
  auto own = parse_proc_status(*own_text);
  if (!own) return fail(Error::parse(own_path.string() + ": " + own.error().message));
  UserTasks user;
  user.uid = own->uid;
  user.cpus_allowed = cpus_allowed(*own_text);
  if (!count_tasks) return user;
  const std::filesystem::path proc = context.root.proc();
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(proc.c_str()), &::closedir);
  if (!dir) return fail(Error::from_errno(errno, proc.string()));
  std::vector<pid_t> pids;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    pid_t pid = 0;
    const auto [last, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error == std::errc() && last == name.data() + name.size() && all_digits(name)) {
      pids.push_back(pid);
    }
  }
  // The kernel generates each status anew (~20 us): on many pids two threads halve the wait.
  std::array<Count, 2> counts{};
  std::atomic<std::size_t> next{0};
  const auto work = [&](Count& count) {
    std::vector<char> buffer(kStatusBuffer);
    for (;;) {
      const std::size_t first = next.fetch_add(kPidsPerClaim, std::memory_order_relaxed);
      if (first >= pids.size()) return;
      const std::size_t last = std::min(first + kPidsPerClaim, pids.size());
      for (std::size_t i = first; i < last; ++i) {
        count_pid(context, ::dirfd(dir.get()), pids[i], user.uid, buffer, count);
      }
    }
  };
  if (pids.size() >= kParallelMinimum) {
    // Without a second thread (a task limit) this one takes every pid.
    auto helper = try_start_thread([&] { work(counts[1]); });
    work(counts[0]);
    if (helper) helper->join();
  } else {
    work(counts[0]);
  }
  for (const Count& count : counts) {
    user.tasks += count.tasks;
    user.processes += count.processes;
  }
  return user;
}

}  // namespace headroom
