#include "core/clean/activity_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace headroom {

namespace {

// Any use of an entry: not IN_CLOSE_NOWRITE alone (it follows an IN_OPEN anyway).
constexpr std::uint32_t kUse = IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_OPEN |
                               IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE |
                               IN_DELETE_SELF | IN_MOVE_SELF;

}  // namespace

ActivityWatch::ActivityWatch() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}

int ActivityWatch::add(int dir_fd, std::size_t item, const std::string& child) {
  if (!fd_.ok()) return EBADF;
  const std::string path = "/proc/self/fd/" + std::to_string(dir_fd);
  const int wd = ::inotify_add_watch(fd_.get(), path.c_str(), kUse | IN_ONLYDIR);
  if (wd < 0) return errno;
  interests_[wd].push_back({item, child});
  return 0;
}

void ActivityWatch::reset() {
  collect();
  active_.clear();
  overflowed_ = false;
}

void ActivityWatch::forget(std::size_t item) {
  for (auto it = interests_.begin(); it != interests_.end();) {
    std::erase_if(it->second, [&](const Interest& interest) { return interest.item == item; });
    if (it->second.empty()) {
      (void)::inotify_rm_watch(fd_.get(), it->first);
      it = interests_.erase(it);
    } else {
      ++it;
    }
  }
}

void ActivityWatch::collect() {
  if (!fd_.ok()) return;
  alignas(struct inotify_event) std::array<char, 64 * 1024> buffer{};
  for (;;) {
    const ssize_t got = ::read(fd_.get(), buffer.data(), buffer.size());
    if (got <= 0) return;  // EAGAIN: nothing more
    for (ssize_t at = 0; at < got;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(buffer.data() + at);
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
      if ((event->mask & IN_Q_OVERFLOW) != 0) {
        overflowed_ = true;
        continue;
      }
      if ((event->mask & kUse) == 0) continue;  // IN_IGNORED and the like
      const auto found = interests_.find(event->wd);
      if (found == interests_.end()) continue;
      const std::string name = event->len > 0 ? std::string(event->name) : std::string();
      for (const Interest& interest : found->second) {
        if (interest.child.empty() || interest.child == name) active_.insert(interest.item);
      }
    }
  }
}

}  // namespace headroom
