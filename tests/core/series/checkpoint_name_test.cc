#include "core/series/checkpoint_name.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(ParseCheckpointName, ReadsStepsEpochsAndMetricsOfCommonNamingSchemes) {
  const struct {
    const char* name;
    std::optional<std::uint64_t> step;
    std::optional<std::uint64_t> epoch;
  } cases[] = {
      {"checkpoint-500", 500, std::nullopt},  // Hugging Face Trainer
      {"checkpoint-1000", 1000, std::nullopt},
      {"tmp-checkpoint-1500", 1500, std::nullopt},  // HF while saving
      {"global_step2000", 2000, std::nullopt},      // DeepSpeed
      {"epoch=3-step=400.ckpt", 400, 3},            // Lightning
      {"epoch=3-val_loss=0.12.ckpt", std::nullopt, 3},
      {"ckpt_epoch1.pt", std::nullopt, 1},
      {"model_step_1200.pth", 1200, std::nullopt},
      {"iter_0003000.pt", 3000, std::nullopt},  // Megatron
      {"model_500.pt", 500, std::nullopt},      // a bare trailing number
      {"last.ckpt", std::nullopt, std::nullopt},
      {"model.safetensors", std::nullopt, std::nullopt},
  };
  for (const auto& c : cases) {
    const CheckpointName parsed = parse_checkpoint_name(c.name);
    EXPECT_EQ(parsed.step, c.step) << c.name;
    EXPECT_EQ(parsed.epoch, c.epoch) << c.name;
  }
}

TEST(ParseCheckpointName, KeepsMetricValuesOutOfTheStepNumber) {
  const CheckpointName parsed =
      parse_checkpoint_name("epoch=2-step=300-val_loss=0.1234-val_acc=0.91.ckpt");
  EXPECT_EQ(parsed.step, 300u);
  EXPECT_EQ(parsed.epoch, 2u);
  ASSERT_EQ(parsed.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(*parsed.metric("val_loss"), 0.1234);
  EXPECT_DOUBLE_EQ(*parsed.metric("val_acc"), 0.91);
  EXPECT_FALSE(parsed.metric("loss"));
  EXPECT_DOUBLE_EQ(*parse_checkpoint_name("run-loss=1e-3.pt").metric("loss"), 0.001);
}

TEST(ParseCheckpointName, MarksBestLastAndTemporaryNames) {
  EXPECT_TRUE(parse_checkpoint_name("last.ckpt").best_or_last);
  EXPECT_TRUE(parse_checkpoint_name("model_best.pth").best_or_last);
  EXPECT_TRUE(parse_checkpoint_name("BEST-epoch=3.ckpt").best_or_last);
  EXPECT_FALSE(parse_checkpoint_name("checkpoint-100").best_or_last);
  EXPECT_TRUE(parse_checkpoint_name("model.pt.tmp").temporary);
  EXPECT_TRUE(parse_checkpoint_name("epoch=1.ckpt.partial").temporary);
  EXPECT_TRUE(parse_checkpoint_name("tmp-checkpoint-20").temporary);
  EXPECT_FALSE(parse_checkpoint_name("checkpoint-20").temporary);
}

TEST(IsCheckpointName, AcceptsSeriesMembersAndRejectsPartsOfOneModel) {
  for (const char* name : {"a.pt", "b.PTH", "epoch=1.ckpt", "w.safetensors", "x.bin", "m.pt.tmp"}) {
    EXPECT_TRUE(is_checkpoint_file_name(name)) << name;
  }
  for (const char* name : {"config.json", "trainer_state.json", "model.safetensors", "optimizer.pt",
                           "training_args.bin", "pytorch_model.bin", "rng_state_3.pth",
                           "model-00001-of-00004.safetensors", "notes.txt"}) {
    EXPECT_FALSE(is_checkpoint_file_name(name)) << name;
  }
  for (const char* name :
       {"checkpoint-500", "global_step100", "tmp-checkpoint-7", "epoch=1-step=9.ckpt", "step_40"}) {
    EXPECT_TRUE(is_checkpoint_dir_name(name)) << name;
  }
  for (const char* name : {"runs", "logs", "checkpoint", "wandb", "latest"}) {
    EXPECT_FALSE(is_checkpoint_dir_name(name)) << name;
  }
}

TEST(SeriesTemplate, TakesOutOnlyTheNumbersThatVaryAlongASeries) {
  const struct {
    const char* name;
    bool directory;
    const char* series;
  } cases[] = {
      {"step_000100.pt", false, "step_{N}.pt"},
      {"checkpoint-500", true, "checkpoint-{N}/"},
      {"tmp-checkpoint-700", true, "checkpoint-{N}/"},  // a save in progress joins its series
      {"global_step2000", true, "global_step{N}/"},
      {"epoch=3-step=400.ckpt", false, "epoch={E}-step={N}.ckpt"},
      {"epoch=3-val_loss=0.12.ckpt", false, "epoch={E}-val_loss={M}.ckpt"},
      {"fold0_epoch_009.pt", false, "fold0_epoch_{E}.pt"},
      {"fold1_epoch_002.pt", false, "fold1_epoch_{E}.pt"},
      {"model_step_1200.pth", false, "model_step_{N}.pth"},
      {"ckpt-1000.pth", false, "ckpt-{N}.pth"},
      {"ckpt-1000.pth.tmp", false, "ckpt-{N}.pth"},
      {"state_100.pth.tar", false, "state_{N}.pth.tar"},  // an extension not known as such
      {"resnet50.pt", false, "resnet50.pt"},              // no step: a series of one
      {"resnet-50.pt", false, "resnet-50.pt"},            // an architecture's size, not a step
      {"vgg_16.pth", false, "vgg_16.pth"},
      {"last.ckpt", false, "last.ckpt"},
      {"v2_model_500.pt", false, "v2_model_{N}.pt"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(series_template(c.name, c.directory), c.series) << c.name;
  }
  EXPECT_NE(series_template("checkpoint-5", true), series_template("checkpoint-5", false));
}

TEST(ParseSaveTemp, ReadsTargetAndWriter) {
  const auto temp = parse_save_temp(".step_000100.pt.headroom-tmp-4242-0a1b2c3d");
  ASSERT_TRUE(temp);
  EXPECT_EQ(temp->target, "step_000100.pt");
  EXPECT_EQ(temp->pid, 4242);
  for (const char* name : {"step_000100.pt", ".step.headroom-tmp-", ".x.headroom-tmp-0-aa",
                           "x.headroom-tmp-12-aa", ".x.headroom-tmp-abc-12"}) {
    EXPECT_FALSE(parse_save_temp(name)) << name;
  }
}

}  // namespace
}  // namespace headroom
