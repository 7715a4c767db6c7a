#pragma once
// What a checkpoint's name says: its step and epoch numbers, metrics written
// into it (PyTorch Lightning's "epoch=3-step=400-val_loss=0.123.ckpt"), and
// whether it is a best/last copy or a temporary file still being saved.
// Pure functions of the name; docs/du-prune.md lists the recognised forms.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

/// The parsed name of one checkpoint file or directory.
struct CheckpointName {
  std::optional<std::uint64_t> step;  ///< step=, global_step, checkpoint-N, iter, a trailing number
  std::optional<std::uint64_t> epoch;                   ///< epoch=, epoch_N, ckpt_epochN
  std::vector<std::pair<std::string, double>> metrics;  ///< other key=value pairs, in name order
  bool best_or_last = false;  ///< the name contains "best" or "last" (any case)
  bool temporary = false;     ///< *.tmp, *.partial, *.part, *.incomplete, tmp-checkpoint-N, .tmp*

  /// The number that orders checkpoints: the step when the name has one, else the epoch.
  [[nodiscard]] std::optional<std::uint64_t> order() const { return step ? step : epoch; }
  /// The value of metric `key`, when the name carries it.
  [[nodiscard]] std::optional<double> metric(std::string_view key) const;
};

/// Parses a file or directory name (extension included).
[[nodiscard]] CheckpointName parse_checkpoint_name(std::string_view name);

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

}  // namespace headroom
