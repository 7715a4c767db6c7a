#include "cli/check_options.h"

#include <fmt/format.h>

#include <cctype>
#include <utility>

#include "core/operand.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

Result<std::uint64_t> count(std::int64_t value, std::string_view flag) {
  if (value < 0)
    return fail(Error::invalid(fmt::format("{} must not be negative, got {}", flag, value)));
  return static_cast<std::uint64_t>(value);
}

Result<std::optional<std::uint64_t>> optional_size(const std::string& text, std::string_view flag) {
  if (text.empty()) return std::optional<std::uint64_t>{};
  auto size = parse_size(text);
  if (!size) return fail(Error::invalid(fmt::format("{}: {}", flag, size.error().message)));
  return std::optional<std::uint64_t>{*size};
}

// The core's validation names CheckOptions' fields ("keep must be at least 1"); a user
// of this CLI typed flags. Words in single quotes are the user's values, left alone.
Error as_flags(Error error) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"warn_percent", "--warn-percent"},
      {"critical_percent", "--critical-percent"},
      {"ranks", "--ranks"},
      {"prefetch", "--prefetch"},
      {"workers", "--workers"},
      {"keep", "--keep"},
      {"only", "--only"}};
  const auto is_word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  std::string out;
  const std::string& text = error.message;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\'') quoted = !quoted;
    if (!quoted && (i == 0 || !is_word(text[i - 1]))) {
      bool replaced = false;
      for (const auto& [field, flag] : kFlags) {
        const std::size_t end = i + field.size();
        if (text.compare(i, field.size(), field) == 0 &&
            (end == text.size() || !is_word(text[end]))) {
          out += flag;
          i = end;
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
    }
    out += text[i++];
  }
  error.message = std::move(out);
  return error;
}

}  // namespace

void add_check_flags(CLI::App& app, CheckFlags& flags) {
  app.add_option("--dir", flags.dirs,
                 "directory the job writes to (checkpoints, logs); repeatable; default: cwd");
  app.add_option("--ckpt-size", flags.checkpoint_size, "size of one checkpoint, e.g. 12GiB");
  app.add_option("--keep", flags.keep, "checkpoints kept at once (default 1)");
  app.add_option("--workers", flags.workers, "DataLoader num_workers per rank");
  app.add_option("--prefetch", flags.prefetch, "DataLoader prefetch_factor (default 2)");
  app.add_option("--batch-bytes", flags.batch_bytes, "bytes of one batch, e.g. 32MiB");
  app.add_option("--ranks", flags.ranks, "training processes per host (default 1)");
  app.add_option("--gpus", flags.gpus,
                 "GPUs per host: NCCL's shm transport, CUDA's address space, RDMA memlock");
  app.add_option("--worker-rss", flags.worker_rss, "resident memory of one process, e.g. 3GiB");
  app.add_option("--warn-percent", flags.warn_percent, "use% that warns (default 85)");
  app.add_option("--critical-percent", flags.critical_percent,
                 "use% that is critical (default 95)");
  app.add_option("--only", flags.only,
                 "report only these findings (an id as printed, e.g. fd.system, or a prefix, "
                 "e.g. shm); repeatable");
}

Result<CheckOptions> to_check_options(const CheckFlags& flags,
                                      const std::filesystem::path& working_directory) {
  CheckOptions options;
  auto dirs = resolve_job_dirs(flags.dirs, working_directory);
  if (!dirs) return fail(Error::invalid("--dir " + dirs.error().message));
  options.dirs = std::move(*dirs);

  auto checkpoint = optional_size(flags.checkpoint_size, "--ckpt-size");
  if (!checkpoint) return fail(checkpoint.error());
  options.checkpoint_bytes = *checkpoint;
  auto batch = optional_size(flags.batch_bytes, "--batch-bytes");
  if (!batch) return fail(batch.error());
  options.batch_bytes = *batch;
  auto rss = optional_size(flags.worker_rss, "--worker-rss");
  if (!rss) return fail(rss.error());
  options.worker_rss = *rss;

  const std::pair<std::int64_t, std::uint64_t*> counts[] = {{flags.keep, &options.keep},
                                                            {flags.workers, &options.workers},
                                                            {flags.prefetch, &options.prefetch},
                                                            {flags.ranks, &options.ranks},
                                                            {flags.gpus, &options.gpus}};
  const std::string_view names[] = {"--keep", "--workers", "--prefetch", "--ranks", "--gpus"};
  for (std::size_t i = 0; i < std::size(counts); ++i) {
    auto value = count(counts[i].first, names[i]);
    if (!value) return fail(value.error());
    *counts[i].second = *value;
  }
  options.warn_percent = flags.warn_percent;
  options.critical_percent = flags.critical_percent;
  options.only = flags.only;
  if (auto valid = validate(options); !valid) return fail(as_flags(valid.error()));
  return options;
}

}  // namespace headroom::cli
