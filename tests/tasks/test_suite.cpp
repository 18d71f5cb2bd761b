// The JSONL loader and validator (tasks/suite.h): a good line loads with every field, and each
// kind of bad line is rejected with a message naming the file, the line and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "tasks/suite.h"

namespace leap::tasks {
namespace {

using json = nlohmann::json;

json task_with_id(const std::string& id) {
  json j = json::parse(R"J({"id": "L1/relu_mul", "level": 1, "family": "elementwise",
    "prompt": "Compute out[i] = max(a[i], 0) * b[i] for every i < n.",
    "params": {"n": 1048576, "alpha": 0.5}, "cpu_params": {"n": 4099, "alpha": 0.25},
    "buffers": [{"name": "a", "dtype": "f32", "shape": ["n"], "role": "in", "init": "normal"},
                {"name": "b", "dtype": "f16", "shape": ["n"], "role": "in", "init": "uniform(-1, 1)"},
                {"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"}],
    "reference": "```cuda\n__global__ void k(const float* a, const __half* b, float* out, int n) {}\n// launch: k<<<cdiv(n, 256), 256>>>(a, b, out, n)\n```",
    "atol": 1e-5, "rtol": 1e-5, "split": "train"})J");
  j["id"] = id;
  return j;
}

// A two-line suite whose second line is `bad`; returns the error message (empty if it loaded).
std::string load_error(const json& bad) {
  std::string text = task_with_id("L1/first").dump() + "\n" + bad.dump() + "\n";
  auto s = parse_suite(text, "suite.jsonl");
  if (s) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  return s.status().message();
}

TEST(Suite, GoodLineLoadsEveryField) {
  std::string text = task_with_id("L1/a").dump() + "\n\n" + task_with_id("L1/b").dump() + "\n";
  auto s = parse_suite(text, "s.jsonl");
  ASSERT_TRUE(s) << s.status().message();
  ASSERT_EQ(s->tasks.size(), 2u);
  const Task& t = s->tasks[0];
  EXPECT_EQ(t.id, "L1/a");
  EXPECT_EQ(t.level, 1);
  EXPECT_EQ(t.family, "elementwise");
  EXPECT_EQ(std::get<int64_t>(t.params.at("n")), 1048576);
  EXPECT_EQ(std::get<double>(t.params.at("alpha")), 0.5);
  EXPECT_EQ(std::get<int64_t>(t.cpu_params.at("n")), 4099);
  ASSERT_EQ(t.buffers.size(), 3u);
  EXPECT_EQ(t.buffers[1].dtype, DType::kF16);
  EXPECT_EQ(t.buffers[1].init.kind, Init::Kind::kUniform);
  EXPECT_EQ(t.buffers[1].init.a, -1);
  EXPECT_EQ(t.buffers[1].init.b, 1);
  EXPECT_EQ(t.buffers[2].role, Role::kOut);
  EXPECT_EQ(t.split, Split::kTrain);
  EXPECT_NE(s->find("L1/b"), nullptr);
  EXPECT_EQ(s->find("L1/c"), nullptr);
  auto missing = find_task(*s, "L1/c");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("did you mean 'L1/"), std::string::npos);
}

TEST(Suite, SelectsBySplit) {
  json h = task_with_id("L1/h");
  h["split"] = "heldout";
  std::string text =
      task_with_id("L1/a").dump() + "\n" + h.dump() + "\n" + task_with_id("L1/b").dump();
  auto s = parse_suite(text, "s.jsonl");
  ASSERT_TRUE(s) << s.status().message();
  auto train = select_tasks(*s, Split::kTrain);
  auto held = select_tasks(*s, Split::kHeldout);
  ASSERT_EQ(train.size(), 2u);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(train[1]->id, "L1/b");
  EXPECT_EQ(held[0]->id, "L1/h");
  EXPECT_TRUE(held[0]->seen_in_train.empty());
}

// A held-out task may say why it is not a new combination after all; leap eval reports the
// others apart.
TEST(Suite, HeldoutTaskMarkedSeenInTrain) {
  json h = task_with_id("L1/h");
  h["split"] = "heldout";
  h["seen_in_train"] = {"u2: its held-out pair is in train", "noop: the scale does nothing"};
  auto s = parse_suite(h.dump(), "s.jsonl");
  ASSERT_TRUE(s) << s.status().message();
  EXPECT_EQ(s->tasks[0].seen_in_train,
            (std::vector<std::string>{"u2: its held-out pair is in train",
                                      "noop: the scale does nothing"}));
}

struct BadCase {
  const char* name;
  std::function<void(json&)> mutate;
  const char* field;    // must appear in the message as field 'X'
  const char* message;  // and this text
};

TEST(Suite, EveryKindOfBadLineNamesLineAndField) {
  const std::vector<BadCase> cases = {
      {"missing id", [](json& j) { j.erase("id"); }, "id", "missing"},
      {"id not string", [](json& j) { j["id"] = 3; }, "id", "must be a string"},
      {"id with space", [](json& j) { j["id"] = "L1/a b"; }, "id", "without spaces"},
      {"level float", [](json& j) { j["level"] = 1.5; }, "level", "integer"},
      {"level zero", [](json& j) { j["level"] = 0; }, "level", "between 1 and 100"},
      {"no family", [](json& j) { j["family"] = " "; }, "family", "kind of task"},
      {"no prompt", [](json& j) { j["prompt"] = ""; }, "prompt", "what to compute"},
      {"unknown field", [](json& j) { j["splt"] = "train"; }, "splt", "did you mean 'split'"},
      {"params not object", [](json& j) { j["params"] = json::array(); }, "params", "object"},
      {"param bool", [](json& j) { j["params"]["n"] = true; }, "params.n", "integer"},
      {"param missing in cpu", [](json& j) { j["cpu_params"].erase("n"); }, "cpu_params", "'n'"},
      {"param extra in cpu", [](json& j) { j["cpu_params"]["q"] = 3; }, "params", "'q'"},
      {"size past int32", [](json& j) { j["params"]["n"] = int64_t{1} << 31; }, "params.n",
       "does not fit a 32-bit int"},
      {"param type mismatch", [](json& j) { j["cpu_params"]["alpha"] = 1; }, "cpu_params.alpha",
       "integer vs float"},
      {"param reserved name",
       [](json& j) {
         j["params"]["min"] = 1;
         j["cpu_params"]["min"] = 1;
       },
       "params.min", "identifier"},
      {"buffers empty", [](json& j) { j["buffers"] = json::array(); }, "buffers", "non-empty"},
      {"buffer unknown field", [](json& j) { j["buffers"][0]["dtyp"] = "f32"; }, "buffers[0].dtyp",
       "did you mean 'dtype'"},
      {"bad dtype", [](json& j) { j["buffers"][1]["dtype"] = "f64"; }, "buffers[1].dtype",
       "f32, f16, bf16, i32, i64, u8"},
      {"bad role", [](json& j) { j["buffers"][0]["role"] = "input"; }, "buffers[0].role",
       "in, out, inout"},
      {"bad init", [](json& j) { j["buffers"][0]["init"] = "gaussian"; }, "buffers[0].init",
       "normal, uniform(a,b)"},
      {"uniform one arg", [](json& j) { j["buffers"][0]["init"] = "uniform(1)"; },
       "buffers[0].init", "two numbers"},
      {"uniform reversed", [](json& j) { j["buffers"][0]["init"] = "uniform(1, -1)"; },
       "buffers[0].init", "a < b"},
      {"uniform past f16", [](json& j) { j["buffers"][1]["init"] = "uniform(-1e6, 1e6)"; },
       "buffers[1].init", "past f16's largest value 65504"},
      {"randint fraction", [](json& j) { j["buffers"][0]["init"] = "randint(0, 2.5)"; },
       "buffers[0].init", "integers"},
      {"normal on ints", [](json& j) { j["buffers"][0]["dtype"] = "i32"; }, "buffers[0].init",
       "float dtype"},
      {"randint too wide for u8",
       [](json& j) {
         j["buffers"][0]["dtype"] = "u8";
         j["buffers"][0]["init"] = "randint(0, 300)";
       },
       "buffers[0].init", "does not fit u8"},
      {"init missing on in", [](json& j) { j["buffers"][0].erase("init"); }, "buffers[0].init",
       "missing"},
      {"init on out", [](json& j) { j["buffers"][2]["init"] = "zeros"; }, "buffers[2].init",
       "no init"},
      {"duplicate buffer", [](json& j) { j["buffers"][1]["name"] = "a"; }, "buffers[1].name",
       "unique"},
      {"buffer named like param", [](json& j) { j["buffers"][1]["name"] = "n"; }, "buffers[1].name",
       "also a parameter"},
      {"buffer name not identifier", [](json& j) { j["buffers"][1]["name"] = "2b"; },
       "buffers[1].name", "identifier"},
      {"shape empty", [](json& j) { j["buffers"][0]["shape"] = json::array(); }, "buffers[0].shape",
       "non-empty"},
      {"shape unknown name", [](json& j) { j["buffers"][0]["shape"] = {"nn"}; },
       "buffers[0].shape[0]", "'nn'"},
      {"shape negative on cpu", [](json& j) { j["buffers"][0]["shape"] = {"n - 5000"}; },
       "buffers[0].shape[0]", "under cpu_params"},
      {"shape uses float param", [](json& j) { j["buffers"][0]["shape"] = {"alpha"}; },
       "buffers[0].shape[0]", "float"},
      {"shape too large on cpu",
       [](json& j) {
         j["buffers"][0]["shape"] = {"n", "1100"};
       },
       "buffers[0].shape", "interpreter"},
      {"shape too large on gpu",
       [](json& j) {
         j["buffers"][0]["shape"] = {"n", "n"};
       },
       "buffers[0].shape", "GiB limit"},
      {"no output",
       [](json& j) {
         j["buffers"][2]["role"] = "in";
         j["buffers"][2]["init"] = "zeros";
       },
       "buffers", "out or inout"},
      {"reference without block", [](json& j) { j["reference"] = "__global__ void k() {}"; },
       "reference", "```cuda"},
      {"reference without launch",
       [](json& j) { j["reference"] = "```cuda\n__global__ void k() {}\n```"; }, "reference",
       "// launch:"},
      {"negative atol", [](json& j) { j["atol"] = -1e-5; }, "atol", ">= 0"},
      {"rtol string", [](json& j) { j["rtol"] = "1e-5"; }, "rtol", "number"},
      {"bad split", [](json& j) { j["split"] = "test"; }, "split", "train or heldout"},
      {"missing split", [](json& j) { j.erase("split"); }, "split", "missing"},
      {"seen_in_train on a train task", [](json& j) { j["seen_in_train"] = {"u2"}; },
       "seen_in_train", "only a held-out task"},
      {"seen_in_train empty",
       [](json& j) {
         j["split"] = "heldout";
         j["seen_in_train"] = json::array();
       },
       "seen_in_train", "non-empty list of reasons"},
      {"seen_in_train not strings",
       [](json& j) {
         j["split"] = "heldout";
         j["seen_in_train"] = {1, 2};
       },
       "seen_in_train", "non-empty list of reasons"},
  };
  for (const auto& c : cases) {
    json j = task_with_id("L1/second");
    c.mutate(j);
    std::string msg = load_error(j);
    ASSERT_FALSE(msg.empty()) << c.name << ": loaded";
    EXPECT_NE(msg.find("suite.jsonl:2:"), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(std::string("field '") + c.field + "'"), std::string::npos)
        << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
  }
}

TEST(Suite, FileLevelErrors) {
  auto dup =
      parse_suite(task_with_id("L1/x").dump() + "\n" + task_with_id("L1/x").dump(), "d.jsonl");
  ASSERT_FALSE(dup);
  EXPECT_NE(
      dup.status().message().find("d.jsonl:2: field 'id': 'L1/x' is already the id of line 1"),
      std::string::npos)
      << dup.status().message();
  auto broken = parse_suite(task_with_id("L1/x").dump() + "\n{\"id\": \"L1/y\",\n", "b.jsonl");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.status().message().find("b.jsonl:2: not valid JSON"), std::string::npos)
      << broken.status().message();
  // A number too large for a double is the JSON library's out_of_range, not a parse_error
  // (found by fuzz/suite_fuzz.cpp): still a load error, never an exception.
  auto huge = parse_suite("{\"id\": \"L1/x\", \"level\": 1e999}\n", "h.jsonl");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.status().message().find("h.jsonl:1: not valid JSON"), std::string::npos)
      << huge.status().message();
  auto array = parse_suite("[1, 2]\n", "a.jsonl");
  ASSERT_FALSE(array);
  EXPECT_NE(array.status().message().find("a.jsonl:1: a line must be one JSON object"),
            std::string::npos);
  auto empty = parse_suite("\n  \n", "e.jsonl");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().message().find("no tasks"), std::string::npos);
  auto missing = load_suite("/nonexistent/suite.jsonl");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/suite.jsonl"), std::string::npos);
}

TEST(Suite, NamesRoundTrip) {
  for (const char* s :
       {"normal", "zeros", "ones", "uniform(-1,1)", "randint(0,255)", "uniform(0.5,2)"}) {
    auto init = parse_init(s);
    ASSERT_TRUE(init) << s;
    EXPECT_EQ(init_name(*init), s);
  }
  auto spaced = parse_init(" uniform( -0.5 , 0.5 ) ");
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->kind, Init::Kind::kUniform);
  EXPECT_EQ(spaced->a, -0.5);
  EXPECT_EQ(spaced->b, 0.5);
}

}  // namespace
}  // namespace leap::tasks
