#include "core/prune/checkpoint_name.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace headroom {

namespace {

constexpr std::array<std::string_view, 5> kExtensions = {".pt", ".pth", ".ckpt", ".safetensors",
                                                         ".bin"};
constexpr std::array<std::string_view, 4> kTemporarySuffixes = {".tmp", ".partial", ".part",
                                                                ".incomplete"};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

/// Removes one temporary suffix; true when there was one.
bool strip_temporary(std::string_view& name) {
  for (std::string_view suffix : kTemporarySuffixes) {
    if (ends_with(name, suffix)) {
      name.remove_suffix(suffix.size());
      return true;
    }
  }
  return false;
}

bool strip_extension(std::string_view& name) {
  for (std::string_view extension : kExtensions) {
    if (ends_with(name, extension)) {
      name.remove_suffix(extension.size());
      return true;
    }
  }
  return false;
}

std::optional<std::uint64_t> to_number(std::string_view digits) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

/// First capture of `pattern` in `text` as a number.
std::optional<std::uint64_t> find_number(std::string_view text, const RE2& pattern) {
  re2::StringPiece digits;
  if (!RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), pattern, &digits))
    return std::nullopt;
  return to_number(std::string_view(digits.data(), digits.size()));
}

}  // namespace

std::optional<double> CheckpointName::metric(std::string_view key) const {
  for (const auto& [name, value] : metrics) {
    if (name == key) return value;
  }
  return std::nullopt;
}

bool is_checkpoint_file_name(std::string_view name) {
  // Parts of one saved model or trainer state, not members of a series: the
  // fixed names Hugging Face writes into every checkpoint and final model dir,
  // and shards ("model-00001-of-00004.safetensors"), which only make sense together.
  static constexpr std::array<std::string_view, 10> kModelParts = {
      "pytorch_model.bin", "model.safetensors", "adapter_model.bin", "adapter_model.safetensors",
      "training_args.bin", "optimizer.pt",      "scheduler.pt",      "scaler.pt",
      "rng_state.pth",     "optimizer.bin"};
  static const RE2 kShard(R"(-\d+-of-\d+\.)");
  static const RE2 kRankState(R"(^rng_state_\d+\.pth$)");
  const std::string lowered = lower(name);
  if (std::find(kModelParts.begin(), kModelParts.end(), lowered) != kModelParts.end() ||
      RE2::PartialMatch(lowered, kShard) || RE2::FullMatch(lowered, kRankState)) {
    return false;
  }
  std::string_view view = lowered;
  strip_temporary(view);
  return strip_extension(view);
}

bool is_checkpoint_dir_name(std::string_view name) {
  static const RE2 kDirectory(
      R"(^(?:tmp-)?(?:checkpoint[-_]?|global_step_?|step[-_]?|epoch[-_]?|ckpt[-_]?|iter[-_]?)\d+$)");
  const std::string lowered = lower(name);
  return RE2::FullMatch(lowered, kDirectory) || is_checkpoint_file_name(lowered);
}

CheckpointName parse_checkpoint_name(std::string_view name) {
  // key=value pairs as Lightning's ModelCheckpoint writes them; values may be
  // negative or in exponent form. Keys keep their case for --metric matching.
  static const RE2 kPair(R"(([A-Za-z][A-Za-z0-9_./]*)=(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))");
  static const RE2 kStep(
      R"((?:^|[^a-z])(?:global_step|checkpoint|step|iteration|iter|it)[-_]?(\d+))");
  static const RE2 kEpoch(R"(epoch[-_]?(\d+))");
  static const RE2 kTrailing(R"((?:^|[-_.])(\d+)$)");

  CheckpointName parsed;
  const std::string lowered = lower(name);
  std::string_view stem = lowered;
  parsed.temporary = strip_temporary(stem) || lowered.rfind("tmp-", 0) == 0 ||
                     lowered.rfind(".tmp", 0) == 0 || lowered.rfind("tmp_", 0) == 0;
  strip_extension(stem);
  const std::string_view original_stem = name.substr(0, stem.size());
  parsed.best_or_last =
      stem.find("best") != std::string_view::npos || stem.find("last") != std::string_view::npos;

  re2::StringPiece input(original_stem.data(), original_stem.size());
  re2::StringPiece key_piece;
  re2::StringPiece value_piece;
  while (RE2::FindAndConsume(&input, kPair, &key_piece, &value_piece)) {
    const std::string_view key(key_piece.data(), key_piece.size());
    const std::string_view value(value_piece.data(), value_piece.size());
    const std::string lowered_key = lower(key);
    if (lowered_key == "step" || lowered_key == "global_step") {
      parsed.step = to_number(value);
    } else if (lowered_key == "epoch") {
      parsed.epoch = to_number(value);
    } else {
      parsed.metrics.emplace_back(std::string(key),
                                  std::strtod(std::string(value).c_str(), nullptr));
    }
  }
  // Pairs hold the metric values, whose digits must not be read as steps.
  std::string without_pairs = lowered.substr(0, stem.size());
  RE2::GlobalReplace(&without_pairs, kPair, "");
  if (!parsed.step) parsed.step = find_number(without_pairs, kStep);
  if (!parsed.epoch) parsed.epoch = find_number(without_pairs, kEpoch);
  if (!parsed.step && !parsed.epoch) parsed.step = find_number(without_pairs, kTrailing);
  return parsed;
}

}  // namespace headroom
