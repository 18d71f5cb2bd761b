// Run checkpoints on one process (io/checkpoint_dir.h, io/rank_state.h): a checkpoint round trip
// restores the fp32 weights and the moments bit for bit while its model file is the bf16
// export; only the newest `keep` survive; a checkpoint of the older layout (fp32
// model.safetensors, one optimizer.safetensors) still loads; rank-state files that do not tile
// the parameter buffer are refused, naming the folder. The parallel writer is
// test_zero_shard_mpi's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "common/fs_util.h"
#include "io/checkpoint_dir.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace leap::io {
namespace {
namespace fs = std::filesystem;

model::ModelConfig tiny() {
  model::ModelConfig c;
  c.vocab_size = 37;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = 32;
  return c;
}

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "leap_ckptdir_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A model and optimizer with non-trivial moments: two AdamW steps on made-up gradients.
struct Trained {
  backend::CpuBackend be{1};
  model::Transformer model{tiny(), be};
  model::AdamW opt{model::OptimConfig{}, model};
  Trained() {
    model.init_random(3, 0.1f);
    for (int s = 0; s < 2; ++s) {
      for (size_t i = 0; i < model.num_params(); ++i) model.grads()[i] = std::sin(0.37 * i + s);
      opt.step();
    }
  }
};

// What a resume loads into: other weights, and an optimizer that never stepped (zero moments).
struct Fresh {
  backend::CpuBackend be{1};
  model::Transformer model{tiny(), be};
  model::AdamW opt{model::OptimConfig{}, model};
  Fresh() { model.init_random(99, 0.1f); }
};

bool same(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST(CheckpointDir, RoundTripIsExactWhileTheExportIsBf16) {
  Trained t;
  const std::string run = fresh_dir("roundtrip");
  for (int64_t step : {4, 5, 6})
    ASSERT_TRUE(save_checkpoint({run, step, nlohmann::json{{"x", 1}}, 2, ""}, t.model, t.opt).is_ok());
  EXPECT_FALSE(fs::exists(run + "/checkpoints/" + checkpoint_dir_name(4))) << "keep = 2";
  auto latest = latest_checkpoint(run);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(fs::path(*latest).filename(), checkpoint_dir_name(6));
  EXPECT_TRUE(fs::exists(*latest + "/" + rank_state_name(0, 1)));

  Fresh fresh;
  model::Transformer& m = fresh.model;
  model::AdamW& o = fresh.opt;
  ASSERT_EQ(o.steps_taken(), 0);
  auto state = load_checkpoint(*latest, m, o);
  ASSERT_TRUE(state.has_value()) << state.status().message();
  EXPECT_EQ((*state)["step"], 6);
  EXPECT_EQ((*state)["x"], 1);
  EXPECT_EQ(o.steps_taken(), 2);
  const size_t P = t.model.num_params();
  EXPECT_TRUE(same(m.params(), t.model.params(), P));
  EXPECT_TRUE(same(o.m(), t.opt.m(), P));
  EXPECT_TRUE(same(o.v(), t.opt.v(), P));
  // The model file is bf16: 2 bytes a parameter, and reads back as the rounded weights.
  auto f = model::SafetensorsFile::open(*latest + "/model.safetensors");
  ASSERT_TRUE(f.has_value());
  for (const auto& [name, e] : f->entries()) EXPECT_EQ(e.dtype, model::DType::kBF16) << name;
  std::vector<float> exported(P);
  ASSERT_TRUE(model::read_weights(*latest, t.model, exported.data()).is_ok());
  size_t rounded = 0;
  for (size_t i = 0; i < P; ++i) {
    const uint32_t bits = static_cast<uint32_t>(model::f32_to_bf16(t.model.params()[i])) << 16;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    rounded += exported[i] == r;
  }
  EXPECT_EQ(rounded, P);
}

// A state.json of valid JSON whose values have the wrong type is an error naming the file and
// the key (it used to throw inside the readers and end the process without exit code 2).
TEST(CheckpointDir, AStateOfTheWrongTypesIsRefusedNamingTheKey) {
  Trained t;
  const std::string run = fresh_dir("badstate");
  ASSERT_TRUE(save_checkpoint({run, 3, nlohmann::json{{"task_sampler", {{"epoch", 0}, {"position", 4}}}}, 2, ""},
                              t.model, t.opt)
                  .is_ok());
  const std::string dir = run + "/checkpoints/" + checkpoint_dir_name(3);
  const auto good = nlohmann::json::parse(*read_file(dir + "/state.json"));
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* key;
  };
  // Also values of the right type that the readers cannot take: a negative position indexed
  // before the task order (a crash), a step past int wrapped.
  for (const Case& c : {Case{"/step", "3", "\"step\" must be an integer in [0, 2^31), not \"3\""},
                        Case{"/optimizer_steps", -1, "\"optimizer_steps\" must be an integer in [0, 2^31), not -1"},
                        Case{"/step", int64_t{1} << 31, "\"step\" must be an integer in [0, 2^31), not 2147483648"},
                        Case{"/task_sampler/position", 4.5, "\"task_sampler.position\" must be an integer >= 0, not 4.5"},
                        Case{"/task_sampler/position", -3, "\"task_sampler.position\" must be an integer >= 0, not -3"},
                        Case{"/task_sampler/epoch", -1, "\"task_sampler.epoch\" must be an integer >= 0, not -1"},
                        Case{"/material_hash", 7, "\"material_hash\" must be a string, not 7"},
                        Case{"/mode", 1, "\"mode\" must be a string, not 1"}}) {
    nlohmann::json bad = good;
    bad[nlohmann::json::json_pointer(c.pointer)] = c.value;
    ASSERT_TRUE(write_file_atomic(dir + "/state.json", bad.dump()).is_ok());
    Fresh fresh;
    auto state = load_checkpoint(dir, fresh.model, fresh.opt);
    ASSERT_FALSE(state.has_value()) << c.pointer;
    EXPECT_EQ(state.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(state.status().message().find(dir + "/state.json: " + c.key), std::string::npos)
        << state.status().message();
  }
}

// A checkpoint of another model whose tensors have the same shapes (here another RoPE base) is
// refused, naming the key, instead of loading weights the run would compute with differently.
TEST(CheckpointDir, AnotherModelOfTheSameShapesIsRefused) {
  Trained t;
  const std::string run = fresh_dir("othermodel");
  ASSERT_TRUE(save_checkpoint({run, 1, {}, 2, ""}, t.model, t.opt).is_ok());
  const std::string dir = run + "/checkpoints/" + checkpoint_dir_name(1);
  auto config = nlohmann::json::parse(*read_file(dir + "/config.json"));
  config["rope_theta"] = 20000.0;
  ASSERT_TRUE(write_file_atomic(dir + "/config.json", config.dump()).is_ok());
  Fresh fresh;
  auto state = load_checkpoint(dir, fresh.model, fresh.opt);
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(state.status().message().find("config.json: rope_theta is 20000 in the checkpoint but 10000"),
            std::string::npos)
      << state.status().message();
}

// Resuming from an earlier checkpoint sets the later ones aside, so that the newest checkpoint
// is the resumed branch's; writing a step again replaces it without a moment with neither; a
// crashed attempt's unfinished folders of any step go when the next checkpoint begins.
TEST(CheckpointDir, AResumedBranchSetsLaterCheckpointsAsideAndCleansUp) {
  Trained t;
  const std::string run = fresh_dir("branch");
  for (int64_t step : {1, 2, 3}) ASSERT_TRUE(save_checkpoint({run, step, {}, 5, ""}, t.model, t.opt).is_ok());
  auto moved = set_aside_newer_checkpoints(run, 1);
  ASSERT_TRUE(moved.has_value()) << moved.status().message();
  ASSERT_EQ(moved->size(), 2u);
  const std::string root = run + "/checkpoints/";
  EXPECT_EQ((*moved)[0], root + "abandoned_" + checkpoint_dir_name(2));
  EXPECT_TRUE(fs::exists(root + "abandoned_" + checkpoint_dir_name(3) + "/state.json"));
  EXPECT_EQ(fs::path(*latest_checkpoint(run)).filename(), checkpoint_dir_name(1));
  // A user's copy named like a later step is not a checkpoint: neither latest nor pruned.
  fs::copy(root + checkpoint_dir_name(1), root + checkpoint_dir_name(9) + ".bak", fs::copy_options::recursive);
  EXPECT_EQ(fs::path(*latest_checkpoint(run)).filename(), checkpoint_dir_name(1));
  // The resumed run writes step 2 again, and then step 2 once more (a crashed attempt's).
  fs::create_directories(root + ".tmp_" + checkpoint_dir_name(7));
  ASSERT_TRUE(save_checkpoint({run, 2, {{"x", 1}}, 5, ""}, t.model, t.opt).is_ok());
  EXPECT_FALSE(fs::exists(root + ".tmp_" + checkpoint_dir_name(7))) << "an unfinished folder of another step";
  ASSERT_TRUE(save_checkpoint({run, 2, {{"x", 2}}, 5, ""}, t.model, t.opt).is_ok());
  EXPECT_FALSE(fs::exists(root + ".old_" + checkpoint_dir_name(2)));
  EXPECT_EQ(nlohmann::json::parse(*read_file(root + checkpoint_dir_name(2) + "/state.json"))["x"], 2);
  EXPECT_EQ(fs::path(*latest_checkpoint(run)).filename(), checkpoint_dir_name(2));
  EXPECT_TRUE(fs::exists(root + checkpoint_dir_name(9) + ".bak/state.json"));
}

// A crash between finish_checkpoint's two renames (the earlier step_N set aside, the new one not
// yet in place) leaves .old_step_N as that step's only complete copy: resuming finds it, and the
// next checkpoint puts it back under its name instead of deleting it with the crash's leftovers.
TEST(CheckpointDir, AStepLeftSetAsideByACrashIsResumedAndRestored) {
  Trained t;
  const std::string run = fresh_dir("set_aside");
  for (int64_t step : {1, 2}) ASSERT_TRUE(save_checkpoint({run, step, {{"x", step}}, 5, ""}, t.model, t.opt).is_ok());
  const std::string root = run + "/checkpoints/";
  fs::rename(root + checkpoint_dir_name(2), root + ".old_" + checkpoint_dir_name(2));
  fs::create_directories(root + ".tmp_" + checkpoint_dir_name(2));  // the replacement, unfinished
  auto latest = latest_checkpoint(run);
  ASSERT_TRUE(latest.has_value()) << latest.status().message();
  EXPECT_EQ(fs::path(*latest).filename(), ".old_" + checkpoint_dir_name(2));
  Fresh fresh;
  auto state = load_checkpoint(*latest, fresh.model, fresh.opt);
  ASSERT_TRUE(state.has_value()) << state.status().message();
  EXPECT_EQ((*state)["x"], 2);
  auto tmp = begin_checkpoint(run, 3);
  ASSERT_TRUE(tmp.has_value()) << tmp.status().message();
  EXPECT_TRUE(fs::exists(root + checkpoint_dir_name(2) + "/state.json"));
  EXPECT_FALSE(fs::exists(root + ".old_" + checkpoint_dir_name(2)));
  EXPECT_FALSE(fs::exists(root + ".tmp_" + checkpoint_dir_name(2)));
  EXPECT_EQ(fs::path(*latest_checkpoint(run)).filename(), checkpoint_dir_name(2));
  // A later step's set-aside copy belongs to the branch a resume from an earlier step abandons:
  // it is set aside with that branch, and the next checkpoint does not bring it back.
  ASSERT_TRUE(save_checkpoint({run, 9, {}, 5, ""}, t.model, t.opt).is_ok());
  fs::rename(root + checkpoint_dir_name(9), root + ".old_" + checkpoint_dir_name(9));
  auto moved = set_aside_newer_checkpoints(run, 2);
  ASSERT_TRUE(moved.has_value()) << moved.status().message();
  ASSERT_EQ(moved->size(), 1u);
  EXPECT_EQ((*moved)[0], root + "abandoned_" + checkpoint_dir_name(9));
  ASSERT_TRUE(begin_checkpoint(run, 3).has_value());
  EXPECT_FALSE(fs::exists(root + checkpoint_dir_name(9)));
  EXPECT_EQ(fs::path(*latest_checkpoint(run)).filename(), checkpoint_dir_name(2));
}

TEST(CheckpointDir, TheOlderLayoutStillLoads) {
  Trained t;
  const std::string dir = fresh_dir("older");
  ASSERT_TRUE(model::save_model(dir, t.model, model::DType::kF32).is_ok());
  std::vector<model::TensorToWrite> moments;
  for (const auto& ti : t.model.layout().tensors()) moments.push_back({ti.name + ".exp_avg", ti.shape, t.opt.m() + ti.offset});
  for (const auto& ti : t.model.layout().tensors()) moments.push_back({ti.name + ".exp_avg_sq", ti.shape, t.opt.v() + ti.offset});
  ASSERT_TRUE(model::write_safetensors(dir + "/optimizer.safetensors", moments).is_ok());
  ASSERT_TRUE(write_file_atomic(dir + "/state.json", R"({"step": 7, "optimizer_steps": 2})").is_ok());
  Fresh other;
  auto state = load_checkpoint(dir, other.model, other.opt);
  ASSERT_TRUE(state.has_value()) << state.status().message();
  const size_t P = t.model.num_params();
  EXPECT_TRUE(same(other.model.params(), t.model.params(), P));
  EXPECT_TRUE(same(other.opt.m(), t.opt.m(), P));
  EXPECT_TRUE(same(other.opt.v(), t.opt.v(), P));
  EXPECT_EQ(other.opt.steps_taken(), 2);
}

TEST(CheckpointDir, RankStatesThatDoNotTileTheBufferAreRefused) {
  Trained t;
  const size_t P = t.model.num_params();
  const std::string run = fresh_dir("tiling");
  const std::string dir = run + "/checkpoints/" + checkpoint_dir_name(1);
  ASSERT_TRUE(save_checkpoint({run, 1, nlohmann::json::object(), 1, ""}, t.model, t.opt).is_ok());
  // Two ranks' files whose ranges leave a gap at [10, 12), then ones that overlap there.
  for (auto [second_at, want] : {std::pair<size_t, const char*>{12, "exactly once (at float 10"},
                                 std::pair<size_t, const char*>{8, "exactly once (at float 10"}}) {
    fs::remove(dir + "/" + rank_state_name(0, 1));
    ASSERT_TRUE(write_rank_state(dir, 0, 2, t.model, t.opt, {{0, 10}}).is_ok());
    ASSERT_TRUE(write_rank_state(dir, 1, 2, t.model, t.opt, {{second_at, P - second_at}}).is_ok());
    auto st = load_checkpoint(dir, t.model, t.opt);
    ASSERT_FALSE(st.has_value());
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.status().message().find(want), std::string::npos) << st.status().message();
    EXPECT_NE(st.status().message().find(dir), std::string::npos) << st.status().message();
  }
  // Every range present but of a smaller model: the count says so.
  fs::remove(dir + "/" + rank_state_name(1, 2));
  ASSERT_TRUE(write_rank_state(dir, 1, 2, t.model, t.opt, {{10, P - 11}}).is_ok());
  auto st = load_checkpoint(dir, t.model, t.opt);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.status().message().find("another model"), std::string::npos) << st.status().message();
}

}  // namespace
}  // namespace leap::io
