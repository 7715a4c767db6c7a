// One libFuzzer target for every pure parser of the core and the watch daemon (its HTTP
// requests and its config). The first input byte
// picks the parser, the rest is its text; seeds come from tests/fixtures and
// tests/logs (scripts/fuzz builds the seed corpus). Parsers must never crash,
// hang or read out of bounds, whatever /proc or a log contains.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/explain/log_reader.h"
#include "core/kernel/cgroup.h"
#include "core/kernel/file_nr.h"
#include "core/kernel/kmsg.h"
#include "core/kernel/limits.h"
#include "core/kernel/meminfo.h"
#include "core/kernel/mountinfo.h"
#include "core/kernel/pressure.h"
#include "core/kernel/proc_maps.h"
#include "core/kernel/proc_net_unix.h"
#include "core/kernel/proc_pid_status.h"
#include "core/kernel/sysvipc_shm.h"
#include "core/signatures/analyzer.h"
#include "core/signatures/catalog.h"
#include "core/units.h"
#include "daemon/config.h"
#include "daemon/http_server.h"

namespace {

using headroom::Catalog;

const Catalog& builtin() {
  static const Catalog catalog = [] {
    auto loaded = headroom::load_catalog({});
    if (!loaded) __builtin_trap();
    return std::move(*loaded);
  }();
  return catalog;
}

void analyze_log(std::string_view text) {
  static const auto compiled = headroom::compile_catalog(builtin());
  headroom::LogAnalyzer analyzer(compiled);
  // Split the input in two at an arbitrary point: chunk boundaries must not matter.
  const std::size_t half = text.size() / 2;
  analyzer.feed(text.substr(0, half));
  analyzer.feed(text.substr(half));
  (void)analyzer.finish();
}

// The log reader on a real fd (a memfd): what `explain` does with a file or a pipe.
void read_log(std::string_view text) {
  static const auto compiled = headroom::compile_catalog(builtin());
  const int fd = ::memfd_create("fuzz-log", MFD_CLOEXEC);
  if (fd < 0) return;
  if (::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
      ::lseek(fd, 0, SEEK_SET) == 0) {
    headroom::LogAnalyzer analyzer(compiled);
    (void)headroom::feed_fd(analyzer, fd, "fuzz");
    (void)analyzer.finish();
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 19) {
    case 0:
      (void)headroom::parse_mountinfo(text);
      break;
    case 1:
      (void)headroom::parse_meminfo(text);
      break;
    case 2:
      (void)headroom::parse_pressure(text);
      break;
    case 3:
      (void)headroom::parse_proc_cgroup(text);
      break;
    case 4:
      (void)headroom::parse_cgroup_limit(text);
      break;
    case 5:
      (void)headroom::parse_flat_keyed(text);
      break;
    case 6: {
      const auto records = headroom::parse_kmsg(text);
      (void)headroom::parse_oom_events(records);
      break;
    }
    case 7:
      (void)headroom::parse_limits(text);
      break;
    case 8:
      (void)headroom::parse_file_nr(text);
      break;
    case 9:
      (void)headroom::parse_sysvipc_shm(text);
      break;
    case 10:
      (void)headroom::parse_maps_line(text);
      break;
    case 11:
      (void)headroom::parse_size(text);
      (void)headroom::parse_duration(text);
      break;
    case 12:
      (void)headroom::parse_catalog(text, "fuzz");
      break;
    case 13:
      analyze_log(text);
      break;
    case 14:
      (void)headroom::parse_proc_net_unix(text);
      break;
    case 15:
      (void)headroom::parse_proc_status(text);
      break;
    case 16:
      read_log(text);
      break;
    case 17: {  // a request to watch --listen: what a port scanner sends
      static const headroom::daemon::SnapshotCollector collector;
      (void)headroom::daemon::http_response(text, collector);
      break;
    }
    case 18: {  // a watch config (--config FILE) and a --listen address
      headroom::daemon::DaemonConfig config;
      (void)headroom::daemon::apply_toml(text, "fuzz", config, headroom::daemon::Check::kLater);
      (void)headroom::daemon::parse_listen_address(text);
      break;
    }
  }
  return 0;
}
