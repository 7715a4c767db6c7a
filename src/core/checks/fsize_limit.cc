// fsize.limit: RLIMIT_FSIZE ("Max file size", ulimit -f), the largest file a
// process may write. A write past it raises SIGXFSZ; CPython ignores that
// signal, so in Python the write fails with "OSError: [Errno 27] File too
// large" (EFBIG), and torch.save (torch 1.13, a path) aborts with
// "PytorchStreamWriter failed writing file data/0: file write failed" after
// leaving a file of exactly the limit, the same words as on a full disk. A
// program that keeps the default action dies of SIGXFSZ: bash prints "File size
// limit exceeded" and the status is 153 (128 + 25). Thresholds: docs/checks.md,
// "fsize.limit".

#include <fmt/format.h>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/limits.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr RlimitNames kFsizeNames{"-f", kKiB, "fsize", "LimitFSIZE", "fsize", "FSIZE"};

}  // namespace

std::vector<Finding> check_fsize_limit(const CheckInput& input) {
  Finding finding;
  finding.id = "fsize.limit";
  finding.subject = "RLIMIT_FSIZE";
  finding.why =
      "a process may not write a file larger than RLIMIT_FSIZE: in Python the write fails with "
      "\"OSError: [Errno 27] File too large\", torch.save aborts with \"PytorchStreamWriter "
      "failed writing file\" (as on a full disk) and leaves a truncated checkpoint, and other "
      "programs die of SIGXFSZ (\"File size limit exceeded\", exit status 153)";
  auto limit = read_limit(input.context, "Max file size");
  if (!limit) return {unknown_finding(finding.id, finding.subject, limit.error().message)};
  finding.add("soft_limit_bytes", limit_value(limit->soft), "bytes");
  finding.add("hard_limit_bytes", limit_value(limit->hard), "bytes");
  if (input.options.checkpoint_bytes) {
    finding.add("checkpoint_bytes", *input.options.checkpoint_bytes, "bytes");
  }
  if (limit->soft == Limit::kUnlimited) {
    finding.summary = "no file size limit (ulimit -f unlimited)";
    return {std::move(finding)};
  }
  const std::string limited = fmt::format("file size limit {} ({})", format_bytes(limit->soft),
                                          ulimit_command(kFsizeNames, limit->soft));
  const std::optional<std::uint64_t>& checkpoint = input.options.checkpoint_bytes;
  if (checkpoint && *checkpoint > limit->soft) {
    finding.severity = Severity::kCritical;
    finding.summary = fmt::format(
        "{} is below the {} checkpoint: torch.save fails with \"PytorchStreamWriter failed "
        "writing file\" and leaves a truncated file of {}",
        limited, format_bytes(*checkpoint), format_bytes(limit->soft));
  } else {
    finding.severity = Severity::kWarn;
    finding.summary = fmt::format(
        "{}: a checkpoint or log larger than {} fails (\"[Errno 27] File too large\" in Python, "
        "SIGXFSZ elsewhere)",
        limited, format_bytes(limit->soft));
  }
  finding.remedy = raise_limit_remedies(input.runtime, kFsizeNames, *limit, std::nullopt);
  return {std::move(finding)};
}

}  // namespace headroom
