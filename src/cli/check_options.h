#pragma once
// The job-shape flags shared by `check`, `run` and `watch`.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checks/check.h"
#include "core/error.h"

namespace headroom::cli {

/// Raw flag values, validated by to_check_options().
struct CheckFlags {
  std::vector<std::string> dirs;
  std::string checkpoint_size;
  std::int64_t keep = 1;
  std::int64_t workers = 0;
  std::int64_t prefetch = 2;
  std::string batch_bytes;
  std::int64_t ranks = 1;
  std::int64_t gpus = 0;
  std::string worker_rss;
  double warn_percent = 85.0;
  double critical_percent = 95.0;
  std::vector<std::string> only;
};

/// Registers --dir, --ckpt-size, --keep, --workers, --prefetch, --batch-bytes,
/// --ranks, --gpus, --worker-rss, --warn-percent, --critical-percent, --only.
void add_check_flags(CLI::App& app, CheckFlags& flags);
/// Parses sizes, rejects negative counts and missing dirs; errors name the flag.
[[nodiscard]] Result<CheckOptions> to_check_options(const CheckFlags& flags,
                                                    const std::filesystem::path& working_directory);

}  // namespace headroom::cli
