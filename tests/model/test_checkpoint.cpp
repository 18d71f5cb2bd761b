// Checkpoints and configs: safetensors round trip (HF names, format metadata, no lm_head when
// tied), sharded loading, bf16/f16 reading, config.json conventions, and every kind of bad
// input (missing tensor, wrong shape, unsupported dtype, truncated file, config mismatch,
// token id out of range) giving invalid_input that names the file and the tensor.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu_backend.h"
#include "common/fs_util.h"
#include "model/checkpoint.h"
#include "model/model_options.h"
#include "model/optimizer.h"
#include "model/safetensors.h"
#include "model/sampler.h"

namespace leap::model {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

ModelConfig config(bool tied) {
  ModelConfig c;
  c.model_type = tied ? "llama" : "qwen2";
  c.vocab_size = 50;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  c.qkv_bias = !tied;
  return c;
}

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "leap_ckpt_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Raw safetensors bytes from a header object and a data blob.
std::string raw_file(const json& header, const std::string& data) {
  std::string h = header.dump();
  uint64_t n = h.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + h + data;
}

json header_of(const std::string& path) {
  std::string bytes = *read_file(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  return json::parse(bytes.substr(8, n));
}

class Checkpoint : public ::testing::Test {
 protected:
  // Saves a random model of config(tied) into a fresh dir and returns the dir.
  std::string saved(const std::string& name, bool tied) {
    std::string d = fresh_dir(name);
    Transformer m(config(tied), be);
    m.init_random(3);
    EXPECT_TRUE(save_model(d, m).is_ok());
    return d;
  }
  // Expects load_model(dir) to fail with invalid_input mentioning every string in `parts`.
  void expect_bad(const std::string& dir, std::vector<std::string> parts) {
    auto r = load_model(dir, be);
    ASSERT_FALSE(r.has_value()) << "loaded a bad checkpoint in " << dir;
    EXPECT_EQ(r.status().exit_code(), 2) << r.status().message();
    for (const auto& p : parts)
      EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
  }
  backend::CpuBackend be{1};
};

TEST_F(Checkpoint, RoundTripKeepsEveryParameterAndHfConventions) {
  for (bool tied : {false, true}) {
    std::string d = fresh_dir(tied ? "rt_tied" : "rt_untied");
    Transformer m(config(tied), be);
    m.init_random(5);
    ASSERT_TRUE(save_model(d, m).is_ok());
    auto back = load_model(d, be);
    ASSERT_TRUE(back.has_value()) << back.status().message();
    ASSERT_EQ((*back)->num_params(), m.num_params());
    EXPECT_EQ(0, std::memcmp((*back)->params(), m.params(), m.num_params() * sizeof(float)));
    EXPECT_EQ(model_config_to_json((*back)->config()), model_config_to_json(m.config()));
    json h = header_of(d + "/model.safetensors");
    EXPECT_EQ(h["__metadata__"]["format"], "pt");
    EXPECT_EQ(h.contains("lm_head.weight"), !tied);
    EXPECT_EQ(h["model.layers.1.self_attn.k_proj.weight"]["shape"], json::array({8, 16}));
    EXPECT_EQ(h["model.layers.0.self_attn.q_proj.bias"].is_null(), tied);
    EXPECT_EQ(h["model.layers.0.self_attn.q_proj.weight"]["dtype"], "F32");
  }
}

TEST_F(Checkpoint, ShardedIndexLoads) {
  std::string src = saved("shard_src", false);
  auto one = SafetensorsFile::open(src + "/model.safetensors");
  ASSERT_TRUE(one.has_value());
  std::string d = fresh_dir("sharded");
  fs::copy_file(src + "/config.json", d + "/config.json");
  // Split the tensors over two shard files in alternation.
  std::vector<std::vector<float>> store;
  std::vector<TensorToWrite> parts[2];
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  int i = 0;
  for (const auto& [name, e] : one->entries()) {
    size_t n = 1;
    for (auto s : e.shape) n *= static_cast<size_t>(s);
    store.emplace_back(n);
    ASSERT_TRUE(one->read_f32(name, e.shape, store.back().data()).is_ok());
    int shard = i++ % 2;
    index["weight_map"][name] =
        shard ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  i = 0;
  for (const auto& [name, e] : one->entries()) {
    parts[i % 2].push_back({name, e.shape, store[static_cast<size_t>(i)].data()});
    ++i;
  }
  ASSERT_TRUE(write_safetensors(d + "/model-00001-of-00002.safetensors", parts[0]).is_ok());
  ASSERT_TRUE(write_safetensors(d + "/model-00002-of-00002.safetensors", parts[1]).is_ok());
  ASSERT_TRUE(write_file_atomic(d + "/model.safetensors.index.json", index.dump()).is_ok());
  auto a = load_model(src, be), b = load_model(d, be);
  ASSERT_TRUE(a.has_value() && b.has_value()) << b.status().message();
  EXPECT_EQ(0, std::memcmp((*a)->params(), (*b)->params(), (*a)->num_params() * sizeof(float)));
  // A tensor missing from the weight_map is named.
  index["weight_map"].erase("model.norm.weight");
  ASSERT_TRUE(write_file_atomic(d + "/model.safetensors.index.json", index.dump()).is_ok());
  expect_bad(d, {"model.safetensors.index.json", "model.norm.weight"});
}

TEST(Safetensors, Bf16RoundsToNearestEven) {
  auto bf = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f32_to_bf16(f);
  };
  EXPECT_EQ(bf(0x3F800000u), 0x3F80);  // 1
  EXPECT_EQ(bf(0x3F808000u), 0x3F80);  // 1 + 2^-8: a tie, the even neighbour (down)
  EXPECT_EQ(bf(0x3F818000u), 0x3F82);  // 1 + 3 * 2^-8: a tie, the even neighbour (up)
  EXPECT_EQ(bf(0x3F808001u), 0x3F81);  // just past the tie: up
  EXPECT_EQ(bf(0x3F807FFFu), 0x3F80);  // just below it: down
  EXPECT_EQ(bf(0xBF818000u), 0xBF82);  // the sign does not change the rounding
  EXPECT_EQ(bf(0x3FFFFFFFu), 0x4000);  // the carry reaches the exponent: 2
  EXPECT_EQ(bf(0x7F7FFFFFu), 0x7F80);  // FLT_MAX is past bf16's largest finite value: infinity
  EXPECT_EQ(bf(0xFF800000u), 0xFF80);  // -infinity
  EXPECT_EQ(bf(0x00000001u), 0x0000);  // the smallest subnormal rounds to 0
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    const uint16_t b = bf(nan);
    EXPECT_EQ(b & 0x7F80, 0x7F80) << std::hex << nan;
    EXPECT_NE(b & 0x007F, 0) << std::hex << nan;  // still a NaN, not an infinity
  }
}

TEST_F(Checkpoint, SavedAsBf16LoadsAsTheRoundedWeights) {
  std::string d = fresh_dir("rt_bf16");
  Transformer m(config(true), be);
  m.init_random(9);
  ASSERT_TRUE(save_model(d, m, DType::kBF16).is_ok());
  json h = header_of(d + "/model.safetensors");
  EXPECT_EQ(h["model.layers.0.self_attn.q_proj.weight"]["dtype"], "BF16");
  EXPECT_EQ(json::parse(read_file(d + "/config.json").value())["torch_dtype"], "bfloat16");
  const std::string bytes = read_file(d + "/model.safetensors").value();
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(bytes.size() - 8 - header_len, 2 * m.num_params()) << "two bytes a parameter";
  auto back = load_model(d, be);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  size_t differ = 0;
  for (size_t i = 0; i < m.num_params(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(f32_to_bf16(m.params()[i])) << 16;
    float want;
    std::memcpy(&want, &bits, 4);
    ASSERT_EQ((*back)->params()[i], want) << "parameter " << i;
    differ += (*back)->params()[i] != m.params()[i];
  }
  EXPECT_GT(differ, m.num_params() / 2) << "random fp32 weights are almost never exact in bf16";
}

TEST_F(Checkpoint, ShardedSaveHasAnIndexLoadsBackAndReplacesAnEarlierSave) {
  std::string d = fresh_dir("sharded");
  Transformer m(config(false), be);
  m.init_random(4);
  // A fifth of the weights a shard: several shards, none above the limit unless one tensor is.
  const uint64_t limit = m.num_params() * 4 / 5;
  ASSERT_TRUE(save_model(d, m, DType::kF32, limit).is_ok());
  EXPECT_FALSE(fs::exists(d + "/model.safetensors"));
  const json index = json::parse(read_file(d + "/model.safetensors.index.json").value());
  std::set<std::string> files;
  uint64_t total = 0;
  for (const auto& t : m.layout().tensors()) {
    ASSERT_TRUE(index["weight_map"].contains(t.name)) << t.name;
    files.insert(index["weight_map"][t.name].get<std::string>());
    total += 4 * t.numel;
  }
  EXPECT_EQ(index["metadata"]["total_size"], total);
  ASSERT_GE(files.size(), 3u);
  const size_t n = files.size();
  size_t k = 1;
  for (const auto& f : files) {  // model-00001-of-0000n ... in order, each within the limit
    EXPECT_EQ(f, fmt::format("model-{:05d}-of-{:05d}.safetensors", k++, n));
    const json h = header_of(d + "/" + f);
    uint64_t bytes = 0;
    for (auto it = h.begin(); it != h.end(); ++it)
      if (it.key() != "__metadata__") bytes += it.value()["data_offsets"][1].get<uint64_t>() -
                                              it.value()["data_offsets"][0].get<uint64_t>();
    EXPECT_TRUE(bytes <= limit || h.size() == 2) << f << ": " << bytes << " bytes";
  }
  auto back = load_model(d, be);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  for (size_t i = 0; i < m.num_params(); ++i) ASSERT_EQ((*back)->params()[i], m.params()[i]) << i;
  // Saved again as one file: the index and the shards go, and the folder loads the new weights.
  m.init_random(5);
  ASSERT_TRUE(save_model(d, m).is_ok());
  EXPECT_FALSE(fs::exists(d + "/model.safetensors.index.json"));
  for (const auto& f : files) EXPECT_FALSE(fs::exists(d + "/" + f)) << f;
  auto again = load_model(d, be);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ((*again)->params()[0], m.params()[0]);
}

// save_model is staged (begin_staged_export): an export cut short, before or between its
// renames, leaves the earlier folder whole and loadable; the next one cleans up after it, and the
// folder's other files (a README) survive every save.
TEST_F(Checkpoint, AnExportCutShortLeavesTheEarlierFolderWhole) {
  const std::string d = fresh_dir("staged");
  const fs::path parent = fs::path(d).parent_path();
  const fs::path staging_dir = parent / ".tmp_leap_ckpt_staged", old_dir = parent / ".old_leap_ckpt_staged";
  fs::remove_all(staging_dir);
  fs::remove_all(old_dir);
  Transformer first(config(false), be), second(config(false), be);
  first.init_random(4);
  second.init_random(5);
  const uint64_t limit = first.num_params() * 4 / 5;  // several shards
  ASSERT_TRUE(save_model(d, first, DType::kF32, limit).is_ok());
  ASSERT_TRUE(write_file_atomic(d + "/README.md", "notes\n").is_ok());
  auto loads = [&](const Transformer& want) {
    auto back = load_model(d, be);
    if (!back.has_value()) return ::testing::AssertionFailure() << back.status().message();
    for (size_t i = 0; i < want.num_params(); ++i)
      if ((*back)->params()[i] != want.params()[i]) return ::testing::AssertionFailure() << "parameter " << i;
    return ::testing::AssertionSuccess();
  };

  // Cut short while the ranks write their shards: half of them written, nothing installed.
  auto staging = begin_staged_export(d);
  ASSERT_TRUE(staging.has_value()) << staging.status().message();
  EXPECT_EQ(fs::path(*staging), staging_dir);
  const ModelExport plan = plan_model_export(second.layout(), DType::kF32, limit);
  ASSERT_TRUE(write_model_shards(*staging, second, plan, 0, 2).is_ok());
  EXPECT_TRUE(loads(first)) << "the earlier export is untouched";

  // Cut short between the renames: the folder is only its ".old_" copy. The next export puts it
  // back before anything else, and removes the unfinished staging folder.
  fs::rename(d, old_dir);
  staging = begin_staged_export(d);
  ASSERT_TRUE(staging.has_value()) << staging.status().message();
  EXPECT_TRUE(loads(first)) << "put back from " << old_dir;
  EXPECT_FALSE(fs::exists(old_dir));
  EXPECT_TRUE(fs::is_empty(*staging)) << "an unfinished staging folder starts again empty";

  // A whole save (one file now, through a trailing slash): the shards and the index go, the README
  // stays, nothing is left beside the folder.
  ASSERT_TRUE(save_model(d + "/", second).is_ok());
  EXPECT_TRUE(loads(second));
  EXPECT_EQ(read_file(d + "/README.md").value(), "notes\n");
  EXPECT_FALSE(fs::exists(d + "/model.safetensors.index.json"));
  for (size_t k = 0; k < plan.shards.size(); ++k) EXPECT_FALSE(fs::exists(d + "/" + plan.shard_name(k)));
  EXPECT_FALSE(fs::exists(staging_dir));
  EXPECT_FALSE(fs::exists(old_dir));
  EXPECT_FALSE(fs::exists(parent / ".tmp_")) << "a trailing slash names the folder, not an empty name";

  // A file where the folder should be: a clear error, nothing written.
  const std::string file = fresh_dir("staged_file") + "/policy";
  ASSERT_TRUE(write_file_atomic(file, "x").is_ok());
  const auto refused = begin_staged_export(file);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("is a file, not a model folder"), std::string::npos)
      << refused.status().message();
}

TEST(Safetensors, ReadsBf16AndF16) {
  // 1.5 = bf16 0x3FC0, f16 0x3E00; -2 = bf16 0xC000, f16 0xC000; 2^-24 = f16 0x0001 (subnormal).
  const uint16_t bf[2] = {0x3FC0, 0xC000};
  const uint16_t hf[3] = {0x3E00, 0xC000, 0x0001};
  std::string data(reinterpret_cast<const char*>(bf), 4);
  data.append(reinterpret_cast<const char*>(hf), 6);
  json h = {{"a", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {0, 4}}}},
            {"b", {{"dtype", "F16"}, {"shape", {3}}, {"data_offsets", {4, 10}}}}};
  std::string path = ::testing::TempDir() + "half.safetensors";
  ASSERT_TRUE(write_file_atomic(path, raw_file(h, data)).is_ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.has_value()) << f.status().message();
  float a[2], b[3];
  ASSERT_TRUE(f->read_f32("a", {2}, a).is_ok());
  ASSERT_TRUE(f->read_f32("b", {3}, b).is_ok());
  EXPECT_EQ(a[0], 1.5f);
  EXPECT_EQ(a[1], -2.0f);
  EXPECT_EQ(b[0], 1.5f);
  EXPECT_EQ(b[1], -2.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -24));
}

// Both found by fuzz/safetensors_fuzz.cpp (inputs kept in fuzz/regressions/safetensors/).
TEST(Safetensors, ShapeWhoseElementCountWrapsIsRefused) {
  // 2^62 x 4 F32 values are 2^66 bytes: wrapped to 0 they matched the empty byte range.
  json h = {{"w", {{"dtype", "F32"}, {"shape", {int64_t{1} << 62, 4}}, {"data_offsets", {0, 0}}}}};
  auto f = SafetensorsFile::parse(raw_file(h, ""), "wrap.safetensors");
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.status().message().find("wrap.safetensors: tensor 'w': shape"), std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find("too many values"), std::string::npos);
}

// The byte ranges must tile the data section: tensors sharing bytes, or bytes of no tensor (a
// duplicate key's dropped entry leaves such a hole), are a damaged file, not weights.
TEST(Safetensors, OverlapsHolesAndTrailingBytesAreRefused) {
  const std::string data(16, '\0');
  auto refused = [&](const json& h, const std::string& bytes, const std::string& want) {
    auto f = SafetensorsFile::parse(raw_file(h, bytes), "tiles.safetensors");
    ASSERT_FALSE(f.has_value()) << want;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(f.status().message().find(want), std::string::npos) << f.status().message();
  };
  refused({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
           {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}},
          data.substr(0, 8), "bytes [0, 8) overlap tensor 'a'");
  refused({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
           {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}},
          data.substr(0, 12), "tensor 'b': bytes [4, 12) overlap");
  refused({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
           {"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {12, 16}}}}},
          data, "data bytes [8, 12) belong to no tensor (before tensor 'b')");
  refused({{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}}, data,
          "data bytes [8, 16) belong to no tensor (after the last one)");
  // The same tensors tiling the bytes parse.
  json ok = {{"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {8, 16}}}},
             {"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}};
  EXPECT_TRUE(SafetensorsFile::parse(raw_file(ok, data), "tiles.safetensors").has_value());
}

TEST(Safetensors, EmptyTensorReadsIntoNoBuffer) {
  json h = {{"e", {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {0, 0}}}}};
  auto f = SafetensorsFile::parse(raw_file(h, ""), "empty.safetensors");
  ASSERT_TRUE(f.has_value()) << f.status().message();
  // data() is null: memcpy(nullptr, src, 0) is undefined behaviour (UBSan reports it; a plain
  // build shows nothing), so reading an empty tensor must not call it.
  std::vector<float> none;
  EXPECT_TRUE(f->read_f32("e", {0, 4}, none.data()).is_ok());
}

TEST_F(Checkpoint, MissingTensorIsNamed) {
  std::string d = saved("missing", false);
  auto f = SafetensorsFile::open(d + "/model.safetensors");
  std::vector<std::vector<float>> store;
  std::vector<TensorToWrite> keep;
  for (const auto& [name, e] : f->entries()) {
    if (name == "model.layers.1.mlp.up_proj.weight") continue;
    size_t n = 1;
    for (auto s : e.shape) n *= static_cast<size_t>(s);
    store.emplace_back(n);
    ASSERT_TRUE(f->read_f32(name, e.shape, store.back().data()).is_ok());
    keep.push_back({name, e.shape, store.back().data()});
  }
  ASSERT_TRUE(write_safetensors(d + "/model.safetensors", keep).is_ok());
  expect_bad(d, {"model.safetensors", "model.layers.1.mlp.up_proj.weight", "missing"});
}

TEST_F(Checkpoint, WrongShapeAndDtypeAreNamed) {
  std::string d = saved("shape", false);
  std::vector<float> z(16 * 3, 0.0f);
  // Replace the file with one whose norm has the wrong shape.
  auto f = SafetensorsFile::open(d + "/model.safetensors");
  std::vector<std::vector<float>> store;
  std::vector<TensorToWrite> all;
  for (const auto& [name, e] : f->entries()) {
    size_t n = 1;
    for (auto s : e.shape) n *= static_cast<size_t>(s);
    store.emplace_back(n);
    ASSERT_TRUE(f->read_f32(name, e.shape, store.back().data()).is_ok());
    if (name == "model.norm.weight")
      all.push_back({name, {3, 16}, z.data()});
    else
      all.push_back({name, e.shape, store.back().data()});
  }
  ASSERT_TRUE(write_safetensors(d + "/model.safetensors", all).is_ok());
  expect_bad(d, {"model.norm.weight", "[3, 16]", "[16]"});

  json h = {{"x", {{"dtype", "I64"}, {"shape", {1}}, {"data_offsets", {0, 8}}}}};
  ASSERT_TRUE(
      write_file_atomic(d + "/model.safetensors", raw_file(h, std::string(8, '\0'))).is_ok());
  expect_bad(d, {"model.safetensors", "'x'", "I64"});
}

TEST_F(Checkpoint, TruncatedAndGarbledFilesAreErrors) {
  std::string d = saved("trunc", false);
  std::string bytes = *read_file(d + "/model.safetensors");
  ASSERT_TRUE(
      write_file_atomic(d + "/model.safetensors", bytes.substr(0, bytes.size() - 100)).is_ok());
  expect_bad(d, {"model.safetensors", "truncated"});
  ASSERT_TRUE(write_file_atomic(d + "/model.safetensors", bytes.substr(0, 5)).is_ok());
  expect_bad(d, {"truncated"});
  std::string garbled = bytes;
  garbled[9] = '#';
  ASSERT_TRUE(write_file_atomic(d + "/model.safetensors", garbled).is_ok());
  expect_bad(d, {"not a JSON object"});
  fs::remove(d + "/model.safetensors");
  auto r = load_model(d, be);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().exit_code(), 2);
  EXPECT_NE(r.status().message().find("model.safetensors"), std::string::npos);
}

TEST_F(Checkpoint, ConfigThatDoesNotMatchTheTensors) {
  // More layers in the file than the config says: an unexpected tensor is named.
  std::string d = saved("mismatch_more", false);
  ModelConfig one = config(false);
  one.num_hidden_layers = 1;
  ASSERT_TRUE(write_model_config(d + "/config.json", one).is_ok());
  expect_bad(d, {"model.layers.1.", "not part of the model"});
  // Fewer: the first missing tensor is named. Wider: the shape is named.
  ModelConfig three = config(false);
  three.num_hidden_layers = 3;
  ASSERT_TRUE(write_model_config(d + "/config.json", three).is_ok());
  expect_bad(d, {"model.layers.2.", "missing"});
  ModelConfig wide = config(false);
  wide.vocab_size = 51;
  ASSERT_TRUE(write_model_config(d + "/config.json", wide).is_ok());
  expect_bad(d, {"model.embed_tokens.weight", "[50, 16]", "[51, 16]"});
}

TEST(ModelConfigJson, HfConventions) {
  const std::string base =
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 12,
    "num_hidden_layers": 1, "num_attention_heads": 2)";
  auto c = parse_model_config(base + "}", "config.json");
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_EQ(c->num_key_value_heads, 2);  // defaults to H
  EXPECT_EQ(c->head_dim, 4);             // hidden / heads
  EXPECT_FALSE(c->qkv_bias);
  c = parse_model_config(base + R"(, "attention_bias": true, "head_dim": 6, "eos_token_id": [3, 4],
      "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})",
                         "config.json");
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_TRUE(c->qkv_bias && c->o_bias);
  EXPECT_EQ(c->head_dim, 6);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->eos_token_id, 3);
  auto q = parse_model_config(R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2, "rope_theta": 5.0})",
                              "q.json");
  ASSERT_TRUE(q.has_value());
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_FALSE(q->o_bias);
  EXPECT_EQ(q->rope_theta, 5.0);
  // Written configs read back the same.
  auto again = parse_model_config(model_config_to_json(*c), "again.json");
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ(model_config_to_json(*again), model_config_to_json(*c));
  // Qwen3Config: head_dim 128 unless given (not hidden / heads), per-head q/k norms, and
  // attention_bias on q, k, v and o alike; the written config names Qwen3ForCausalLM.
  const std::string qwen3 = R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2,
      "num_key_value_heads": 1, "max_window_layers": 28)";
  auto q3 = parse_model_config(qwen3 + R"(, "use_sliding_window": false})", "q3.json");
  ASSERT_TRUE(q3.has_value()) << q3.status().message();
  EXPECT_EQ(q3->head_dim, 128);
  EXPECT_TRUE(q3->qk_norm);
  EXPECT_FALSE(q3->qkv_bias || q3->o_bias);
  EXPECT_NE(model_config_to_json(*q3).find("Qwen3ForCausalLM"), std::string::npos);
  q3 = parse_model_config(qwen3 + R"(, "head_dim": 6, "attention_bias": true})", "q3.json");
  ASSERT_TRUE(q3.has_value()) << q3.status().message();
  EXPECT_EQ(q3->head_dim, 6);
  EXPECT_TRUE(q3->qkv_bias && q3->o_bias && q3->qk_norm);
  again = parse_model_config(model_config_to_json(*q3), "again.json");
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ(model_config_to_json(*again), model_config_to_json(*q3));
  ParameterLayout layout(*q3);
  ASSERT_NE(layout.find("model.layers.0.self_attn.k_norm.weight"), nullptr);
  EXPECT_EQ(layout.find("model.layers.0.self_attn.q_norm.weight")->shape, std::vector<int64_t>{6});
  EXPECT_GE(layout.find("model.layers.0.self_attn.q_norm.weight")->offset, layout.decay_size());
  auto sliding = parse_model_config(qwen3 + R"(, "use_sliding_window": true})", "q3.json");
  EXPECT_FALSE(sliding.has_value());
  sliding = parse_model_config(
      qwen3 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", "q3.json");
  ASSERT_FALSE(sliding.has_value());
  EXPECT_NE(sliding.status().message().find("sliding_attention"), std::string::npos);
  EXPECT_TRUE(
      parse_model_config(qwen3 + R"(, "layer_types": ["full_attention"]})", "q3.json").has_value());
  EXPECT_EQ(q3->max_position_embeddings, 32768);  // Qwen3Config's default, not LlamaConfig's 2048
}

TEST(ModelConfigJson, UnsupportedAndBadValuesAreClearErrors) {
  const std::string base =
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 12,
    "num_hidden_layers": 1, "num_attention_heads": 2)";
  auto expect_err = [&](const std::string& extra, const std::string& part) {
    auto c = parse_model_config(base + extra + "}", "cfg.json");
    ASSERT_FALSE(c.has_value()) << extra;
    EXPECT_EQ(c.status().exit_code(), 2);
    EXPECT_NE(c.status().message().find(part), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("cfg.json"), std::string::npos);
  };
  expect_err(R"(, "rope_scaling": {"rope_type": "linear", "factor": 2.0})", "rope_scaling");
  expect_err(R"(, "rope_scaling": {"type": "yarn", "factor": 4.0})", "yarn");
  expect_err(R"(, "num_key_value_heads": 3)", "num_key_value_heads");
  expect_err(R"(, "mlp_bias": true)", "mlp_bias");
  expect_err(R"(, "hidden_act": "gelu")", "gelu");
  expect_err(R"(, "vocab_size": "ten")", "vocab_size");
  auto c = parse_model_config(R"({"model_type": "gpt2"})", "cfg.json");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.status().message().find("gpt2"), std::string::npos);
  c = parse_model_config(R"({"model_type": "llama", "vocab_size": 10})", "cfg.json");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.status().message().find("hidden_size"), std::string::npos);
}

TEST_F(Checkpoint, TokenIdsOutOfRangeAreInvalidInput) {
  Transformer m(config(false), be);
  std::vector<float> lp(3);
  auto st = m.forward(TokenBatch::from_sequences({{1, 50, 2}}), lp.data());
  EXPECT_EQ(st.exit_code(), 2);
  EXPECT_NE(st.message().find("token id 50"), std::string::npos) << st.message();
  st = m.forward(TokenBatch::from_sequences({{1, -1}}), lp.data());
  EXPECT_FALSE(st.is_ok());
  std::vector<int32_t> too_long(33, 1);
  std::vector<float> lp2(33);
  EXPECT_FALSE(m.forward(TokenBatch::from_sequences({too_long}), lp2.data()).is_ok());
}

}  // namespace
}  // namespace leap::model

namespace leap::model {
namespace {

// The [model], [sampler] and [optim] sections parse together, with the --model alias.
TEST(ModelOptionSections, DeclareParseAndAlias) {
  OptionSet opts;
  ModelOptions mo;
  SamplerConfig sc;
  OptimConfig oc;
  mo.declare(opts);
  sc.declare(opts);
  oc.declare(opts);
  ASSERT_TRUE(opts.parse({"--model", "models/tiny", "--sampler.top_p=0.9",
                          "--sampler.stop=```||END", "--optim.lr=3e-4", "--optim.warmup_steps=10"})
                  .is_ok());
  EXPECT_EQ(mo.path, "models/tiny");
  EXPECT_DOUBLE_EQ(sc.top_p, 0.9);
  EXPECT_EQ(sc.stop_strings(), (std::vector<std::string>{"```", "END"}));
  EXPECT_DOUBLE_EQ(oc.lr, 3e-4);
  EXPECT_EQ(oc.schedule().warmup_steps, 10);
  OptionSet bad;
  SamplerConfig sc2;
  sc2.declare(bad);
  EXPECT_FALSE(bad.parse({"--sampler.top_p=1.5"}).is_ok());
}

}  // namespace
}  // namespace leap::model
