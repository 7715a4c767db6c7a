#pragma once
// What a checkpoint's name says: its step and epoch numbers, metrics written
// into it (PyTorch Lightning's "epoch=3-step=400-val_loss=0.123.ckpt"), whether
// it is a best/last copy or a temporary file still being saved, and the series
// it belongs to: the name with those numbers taken out ("step_{N}.pt"), so that
// "fold0_epoch_3.pt" and "fold1_epoch_3.pt" are two series and "resnet50.pt" is
// a series of its own. Pure functions of the name; docs/du-prune.md lists the
// recognised forms.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// Where a number the series varies sits in a name.
struct NameNumber {
  enum class Kind { kStep, kEpoch, kMetric };
  Kind kind = Kind::kStep;
  std::size_t position = 0;  ///< offset in the name
  std::size_t length = 0;
};

/// The parsed name of one checkpoint file or directory.
struct CheckpointName {
  std::optional<std::uint64_t> step;  ///< step=, global_step, checkpoint-N, iter, a trailing number
  std::optional<std::uint64_t> epoch;                   ///< epoch=, epoch_N, ckpt_epochN
  std::vector<std::pair<std::string, double>> metrics;  ///< other key=value pairs, in name order
  bool best_or_last = false;  ///< the name contains "best" or "last" (any case)
  bool temporary = false;     ///< *.tmp, *.partial, *.part, *.incomplete, tmp-checkpoint-N, .tmp*
  /// The step, epoch and metric values, in name order (what varies along a series).
  std::vector<NameNumber> numbers;

  /// The number that orders checkpoints: the step when the name has one, else the epoch.
  [[nodiscard]] std::optional<std::uint64_t> order() const { return step ? step : epoch; }
  /// The value of metric `key`, when the name carries it.
  [[nodiscard]] std::optional<double> metric(std::string_view key) const;
};

/// Parses a file or directory name (extension included).
[[nodiscard]] CheckpointName parse_checkpoint_name(std::string_view name);

/// The series `name` belongs to: the name with its step, epoch and metric values
/// replaced by {N}, {E} and {M}, without a temporary marker ("tmp-checkpoint-7" and
/// "checkpoint-9" are both "checkpoint-{N}"), and with a trailing "/" for a directory.
/// A name without such numbers is its own template: a series of one.
[[nodiscard]] std::string series_template(std::string_view name, bool directory);
[[nodiscard]] std::string series_template(std::string_view name, const CheckpointName& parsed,
                                          bool directory);

/// True for *.pt, *.pth, *.ckpt, *.safetensors, *.bin, also with a temporary
/// suffix (model.pt.tmp), except the parts of one model: Hugging Face's fixed
/// names (pytorch_model.bin, model.safetensors, optimizer.pt, ...) and shards
/// (model-00001-of-00004.safetensors).
[[nodiscard]] bool is_checkpoint_file_name(std::string_view name);
/// True for checkpoint directory names: checkpoint-<N> (Hugging Face),
/// global_step<N> (DeepSpeed), tmp-checkpoint-<N>, step_<N>, epoch_<N>,
/// ckpt_<N>, and directories named like checkpoint files (Lightning's
/// DeepSpeed strategy saves "epoch=1-step=100.ckpt/").
[[nodiscard]] bool is_checkpoint_dir_name(std::string_view name);

/// The temp file headroom.save_checkpoint writes before renaming it onto its target:
/// ".<target>.headroom-tmp-<pid>-<id>".
struct SaveTempName {
  std::string target;  ///< the checkpoint name it was going to become
  int pid = 0;         ///< the writer, in its pid namespace
};
/// The marker between the target and the writer's pid (shared with python/headroom).
inline constexpr std::string_view kSaveTempMarker = ".headroom-tmp-";
/// Parses a save temp name; nullopt for any other name.
[[nodiscard]] std::optional<SaveTempName> parse_save_temp(std::string_view name);

}  // namespace headroom
