#include "core/series/checkpoint_name.h"

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

namespace {

/// Strips a final ".ext" of letters (".tar", ".torch") from a name whose extension
/// is not a known checkpoint one, so a trailing step before it is still found.
void strip_other_extension(std::string_view& name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return;
  const std::string_view extension = name.substr(dot + 1);
  if (extension.size() > 12 || std::isalpha(static_cast<unsigned char>(extension[0])) == 0) return;
  for (char c : extension) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) return;
  }
  name.remove_suffix(extension.size() + 1);
}

/// Whether the word before a bare trailing number names an architecture whose
/// size it is ("resnet-50.pt", "vgg_16.pth"): then the number is part of the
/// model's name, not a step, and "resnet-18.pt" is another model, not an older save.
bool architecture_number(std::string_view before) {
  static constexpr std::array<std::string_view, 22> kFamilies = {
      "resnet",       "resnext", "wide_resnet", "vgg", "densenet", "mobilenet",
      "efficientnet", "regnet",  "convnext",    "vit", "deit",     "swin",
      "inception",    "bert",    "gpt",         "t5",  "opt",      "bloom",
      "pythia",       "llama",   "unet",        "yolo"};
  std::size_t start = before.size();
  while (start > 0 && std::isalpha(static_cast<unsigned char>(before[start - 1])) != 0) --start;
  const std::string_view word = before.substr(start);
  return std::find(kFamilies.begin(), kFamilies.end(), word) != kFamilies.end();
}

/// Offset of `piece` (a match inside `text`) in `text`.
std::size_t offset_in(std::string_view text, const re2::StringPiece& piece) {
  return static_cast<std::size_t>(piece.data() - text.data());
}

}  // namespace

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
  if (!strip_extension(stem)) {
    // "state_100.pth.tar": an archive suffix after a known extension.
    strip_other_extension(stem);
    strip_extension(stem);
  }
  const std::string_view original_stem = name.substr(0, stem.size());
  parsed.best_or_last =
      stem.find("best") != std::string_view::npos || stem.find("last") != std::string_view::npos;

  // Pairs hold the metric values, whose digits must not be read as steps: they
  // are masked (same length, so offsets stay those of the name) before the rest.
  std::string masked(stem);
  re2::StringPiece input(original_stem.data(), original_stem.size());
  re2::StringPiece key_piece;
  re2::StringPiece value_piece;
  while (RE2::FindAndConsume(&input, kPair, &key_piece, &value_piece)) {
    const std::string_view key(key_piece.data(), key_piece.size());
    const std::string_view value(value_piece.data(), value_piece.size());
    const std::size_t key_at = offset_in(name, key_piece);
    const std::size_t value_at = offset_in(name, value_piece);
    std::fill(masked.begin() + static_cast<std::ptrdiff_t>(key_at),
              masked.begin() + static_cast<std::ptrdiff_t>(value_at + value.size()), '#');
    const std::string lowered_key = lower(key);
    NameNumber number{NameNumber::Kind::kMetric, value_at, value.size()};
    if (lowered_key == "step" || lowered_key == "global_step") {
      parsed.step = to_number(value);
      number.kind = NameNumber::Kind::kStep;
    } else if (lowered_key == "epoch") {
      parsed.epoch = to_number(value);
      number.kind = NameNumber::Kind::kEpoch;
    } else {
      parsed.metrics.emplace_back(std::string(key),
                                  std::strtod(std::string(value).c_str(), nullptr));
    }
    parsed.numbers.push_back(number);
  }
  const auto find = [&](const RE2& pattern, NameNumber::Kind kind,
                        bool bare) -> std::optional<std::uint64_t> {
    re2::StringPiece digits;
    if (!RE2::PartialMatch(masked, pattern, &digits)) return std::nullopt;
    const std::size_t at = offset_in(masked, digits);
    if (bare && architecture_number(std::string_view(masked).substr(0, at > 0 ? at - 1 : 0))) {
      return std::nullopt;
    }
    auto value = to_number(std::string_view(digits.data(), digits.size()));
    if (value) parsed.numbers.push_back({kind, at, digits.size()});
    return value;
  };
  if (!parsed.step) parsed.step = find(kStep, NameNumber::Kind::kStep, false);
  if (!parsed.epoch) parsed.epoch = find(kEpoch, NameNumber::Kind::kEpoch, false);
  if (!parsed.step && !parsed.epoch) parsed.step = find(kTrailing, NameNumber::Kind::kStep, true);
  std::sort(parsed.numbers.begin(), parsed.numbers.end(),
            [](const NameNumber& a, const NameNumber& b) { return a.position < b.position; });
  return parsed;
}

std::string series_template(std::string_view name, bool directory) {
  return series_template(name, parse_checkpoint_name(name), directory);
}

std::string series_template(std::string_view name, const CheckpointName& parsed, bool directory) {
  std::string out;
  std::size_t at = 0;
  for (const NameNumber& number : parsed.numbers) {
    if (number.position < at) continue;  // overlapping matches: the first wins
    out.append(name.substr(at, number.position - at));
    switch (number.kind) {
      case NameNumber::Kind::kStep:
        out += "{N}";
        break;
      case NameNumber::Kind::kEpoch:
        out += "{E}";
        break;
      case NameNumber::Kind::kMetric:
        out += "{M}";
        break;
    }
    at = number.position + number.length;
  }
  out.append(name.substr(std::min(at, name.size())));
  // A save in progress belongs to the series it will join.
  const std::string lowered = lower(out);
  if (lowered.rfind("tmp-", 0) == 0 || lowered.rfind("tmp_", 0) == 0) out.erase(0, 4);
  for (std::string_view suffix : kTemporarySuffixes) {
    if (ends_with(lowered, suffix) && out.size() > suffix.size()) {
      out.resize(out.size() - suffix.size());
      break;
    }
  }
  if (directory) out += '/';
  return out;
}

std::optional<SaveTempName> parse_save_temp(std::string_view name) {
  if (name.size() < 2 || name.front() != '.') return std::nullopt;
  const std::size_t marker = name.rfind(kSaveTempMarker);
  if (marker == std::string_view::npos || marker < 2) return std::nullopt;
  std::string_view rest = name.substr(marker + kSaveTempMarker.size());
  const std::size_t dash = rest.find('-');
  const auto pid = to_number(rest.substr(0, dash));
  if (!pid || *pid == 0 || *pid > 4'194'304) return std::nullopt;  // PID_MAX_LIMIT
  return SaveTempName{std::string(name.substr(1, marker - 1)), static_cast<int>(*pid)};
}

}  // namespace headroom
