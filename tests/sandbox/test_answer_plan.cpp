// Launch plans over a task's params (bounds checked before anything runs) and marshalling of
// the planned arguments from a kernel's PTX parameter list.
#include <gtest/gtest.h>

#include <cstring>

#include "sandbox/launch_plan.h"
#include "sandbox/marshal.h"

namespace leap::sandbox {
namespace {

tasks::Task make_task() {
  tasks::Task t;
  t.id = "T/axpy";
  t.params = {{"n", int64_t{1000}}, {"alpha", 0.5}};
  t.buffers = {{"x", tasks::DType::kF32, {"n"}, tasks::Role::kIn, {}},
               {"y", tasks::DType::kF32, {"n"}, tasks::Role::kOut, {}}};
  return t;
}

Answer answer_of(const std::string& lines) {
  auto a = parse_answer("```cuda\n__global__ void k() {}\n" + lines + "```\n");
  EXPECT_TRUE(a.has_value()) << a.status().message();
  return a.has_value() ? *a : Answer{};
}

TEST(LaunchPlan, ResolvesArgumentsAndDimensions) {
  auto task = make_task();
  auto a = answer_of(
      "// scratch: part f32[cdiv(n, 128)]\n"
      "// launch: k<<<(cdiv(n, 128), 2), 128, 4*128>>>(x, part, alpha, n - 1, 0.25f)\n");
  auto plan = make_launch_plan(a, task, task.params, PlanLimits{});
  ASSERT_TRUE(plan.has_value()) << plan.status().message();
  ASSERT_EQ(plan->scratch.size(), 1u);
  EXPECT_EQ(plan->scratch[0].count, 8);
  EXPECT_EQ(plan->scratch[0].bytes, 32u);
  const auto& l = plan->launches.at(0);
  EXPECT_EQ(l.grid[0], 8u);
  EXPECT_EQ(l.grid[1], 2u);
  EXPECT_EQ(l.grid[2], 1u);
  EXPECT_EQ(l.block[0], 128u);
  EXPECT_EQ(l.shared_bytes, 512u);
  ASSERT_EQ(l.args.size(), 5u);
  EXPECT_EQ(l.args[0].kind, PlanArg::Kind::kBuffer);
  EXPECT_EQ(l.args[0].index, 0);
  EXPECT_EQ(l.args[1].kind, PlanArg::Kind::kScratch);
  EXPECT_EQ(l.args[2].kind, PlanArg::Kind::kFloat);
  EXPECT_EQ(l.args[2].float_value, 0.5);
  EXPECT_EQ(l.args[3].kind, PlanArg::Kind::kInt);
  EXPECT_EQ(l.args[3].int_value, 999);
  EXPECT_EQ(l.args[4].kind, PlanArg::Kind::kFloat);
  EXPECT_EQ(l.args[4].float_value, 0.25);
}

TEST(LaunchPlan, BoundsAreCheckedBeforeAnythingRuns) {
  auto task = make_task();
  struct Case {
    const char* lines;
    const char* why;
  } cases[] = {
      {"// launch: k<<<1, 2048>>>(x)\n", "block.x = 2048"},
      {"// launch: k<<<1, (64, 32)>>>(x)\n", "2048 threads exceeds 1024"},
      {"// launch: k<<<0, 32>>>(x)\n", "grid.x = 0"},
      {"// launch: k<<<(1, 70000), 32>>>(x)\n", "grid.y = 70000"},
      {"// launch: k<<<(65535, 65535, 65535), 32>>>(x)\n", "blocks per launch"},
      {"// launch: k<<<1, 32, 1000000>>>(x)\n", "dynamic shared memory of 1000000"},
      {"// scratch: big f32[n*n*n*n]\n// launch: k<<<1, 32>>>(x)\n", "scratch limit"},
      {"// scratch: x f32[n]\n// launch: k<<<1, 32>>>(x)\n", "already a buffer"},
      {"// launch: k<<<cdiv(m, 32), 32>>>(x)\n", "grid 'cdiv(m, 32)'"},
      {"// launch: k<<<1, 32>>>(x, zz)\n", "argument 'zz' is not a buffer"},
      {"// launch: k<<<1, 32>>>(x, n / 0)\n", "argument 'n / 0'"},
  };
  for (const auto& c : cases) {
    auto a = answer_of(c.lines);
    auto plan = make_launch_plan(a, task, task.params, PlanLimits{});
    ASSERT_FALSE(plan.has_value()) << c.lines;
    EXPECT_NE(plan.status().message().find(c.why), std::string::npos)
        << c.lines << " -> " << plan.status().message();
    EXPECT_NE(plan.status().message().find("line "), std::string::npos) << plan.status().message();
  }
  std::string many;
  for (int i = 0; i < 17; ++i) many += "// launch: k<<<1, 1>>>()\n";
  auto plan = make_launch_plan(answer_of(many), task, task.params, PlanLimits{});
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.status().message().find("exceed the limit of 16"), std::string::npos);
}

// A launch line whose kernel the code does not declare: the message names what it does declare
// (passing over __launch_bounds__, comments and repeats), so the policy can copy the spelling.
TEST(LaunchPlan, AnUnknownKernelNamesTheDeclaredOnes) {
  auto task = make_task();
  struct Case {
    const char* code;
    const char* says;
  } cases[] = {
      {"__global__ void uu_silu_silu_bf16(int n) {}\n",
       "it declares 'uu_silu_silu_bf16' (define it"},
      {"template <int B> __global__ void __launch_bounds__(256, 2) part(int n) {}\n"
       "// __global__ void commented(int n) {}\n"
       "__global__\nvoid fin (int n) {}\nextern \"C\" __global__ void part(int n);\n",
       "it declares 'part', 'fin' ("},
      {"__device__ float f(float v) { return v; }\n", "it declares no __global__ function at all"},
      {"__global__ void a(){}\n__global__ void b(){}\n__global__ void c(){}\n__global__ void "
       "d(){}\n"
       "__global__ void e(){}\n__global__ void f(){}\n",
       "it declares 'a', 'b', 'c', 'd' and 2 more ("},
  };
  for (const auto& c : cases) {
    auto a = parse_answer(std::string("```cuda\n") + c.code + "// launch: kk<<<1, 32>>>(n)\n```\n");
    ASSERT_TRUE(a.has_value()) << a.status().message();
    auto plan = make_launch_plan(*a, task, task.params, PlanLimits{});
    ASSERT_FALSE(plan.has_value()) << c.code;
    EXPECT_NE(plan.status().message().find("no __global__ kernel 'kk'; " + std::string(c.says)),
              std::string::npos)
        << c.code << " -> " << plan.status().message();
  }
  // Many `__global__` before one name, as a hostile answer may write: listed once, and found
  // without searching the code again from each of them (200,000 searches of 2 MB).
  std::string crowded = "```cuda\n";
  for (int i = 0; i < 200000; ++i) crowded += "__global__ ";
  crowded += "void only(int n) {}\n// launch: kk<<<1, 32>>>(n)\n```\n";
  auto a = parse_answer(crowded);
  ASSERT_TRUE(a.has_value()) << a.status().message();
  auto plan = make_launch_plan(*a, task, task.params, PlanLimits{});
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.status().message().find("; it declares 'only' (define it"), std::string::npos)
      << plan.status().message().substr(0, 200);
}

// A launch line naming a __device__ function: the code has the name, so it is not unknown, but a
// launch line can only start a __global__ kernel. Said before any compile, with the kernels the
// code does declare; a kernel that shares the name, or a __device__ variable, is not mistaken.
TEST(LaunchPlan, ADeviceFunctionIsNotAKernel) {
  auto task = make_task();
  auto plan_of = [&](const std::string& code) {
    auto a = parse_answer("```cuda\n" + code + "// launch: kk<<<1, 32>>>(n)\n```\n");
    EXPECT_TRUE(a.has_value()) << a.status().message();
    return make_launch_plan(*a, task, task.params, PlanLimits{});
  };
  struct Case {
    const char* code;
    const char* says;
  } cases[] = {
      {"__device__ float kk(float v) { return v; }\n__global__ void go(int n) {}\n",
       "line 3: 'kk' is a __device__ function, not a __global__ kernel; it declares 'go' (a "
       "launch"},
      {"template <typename T>\n__host__ __device__ inline T\nkk (T v) { return v; }\n",
       "'kk' is a __device__ function, not a __global__ kernel; it declares no __global__ "
       "function"},
  };
  for (const auto& c : cases) {
    auto plan = plan_of(c.code);
    ASSERT_FALSE(plan.has_value()) << c.code;
    EXPECT_NE(plan.status().message().find(c.says), std::string::npos)
        << c.code << " -> " << plan.status().message();
  }
  for (const char* fine :
       {"__device__ float kk(float v);\n__global__ void kk(int n) {}\n",
        "__device__ int count = 0;\n__global__ void kk(int n) {}\n",
        "__device__ int table[4];\nvoid helper();\n__global__ void kk(int n) {}\n"}) {
    auto plan = plan_of(fine);
    EXPECT_TRUE(plan.has_value()) << fine << " -> " << plan.status().message();
  }
  // Many `__device__` before one function, as a hostile answer may write: read once.
  std::string crowded;
  for (int i = 0; i < 200000; ++i) crowded += "__device__ ";
  auto plan = plan_of(crowded + "float kk(float v) { return v; }\n");
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.status().message().find("'kk' is a __device__ function"), std::string::npos)
      << plan.status().message().substr(0, 200);
}

ptx::ParamInfo param(const char* type, size_t size) {
  return {"p", type, size, size};
}

template <class T>
T read_as(const std::vector<uint8_t>& bytes) {
  T v;
  EXPECT_EQ(bytes.size(), sizeof(T));
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

TEST(Marshal, LaysOutArgumentsAsTheKernelDeclares) {
  auto task = make_task();
  auto a =
      answer_of("// scratch: s i32[4]\n// launch: k<<<1, 1>>>(x, s, alpha, alpha, n, n, -1)\n");
  auto plan = make_launch_plan(a, task, task.params, PlanLimits{});
  ASSERT_TRUE(plan.has_value()) << plan.status().message();
  std::vector<ptx::ParamInfo> params = {param(".u64", 8), param(".u64", 8), param(".f32", 4),
                                        param(".f64", 8), param(".u32", 4), param(".s64", 8),
                                        param(".s32", 4)};
  auto args = marshal_args(plan->launches[0], params, {0x1000, 0x2000}, {0x9000});
  ASSERT_TRUE(args.has_value()) << args.status().message();
  EXPECT_EQ(read_as<uint64_t>((*args)[0]), 0x1000u);
  EXPECT_EQ(read_as<uint64_t>((*args)[1]), 0x9000u);
  EXPECT_EQ(read_as<float>((*args)[2]), 0.5f);
  EXPECT_EQ(read_as<double>((*args)[3]), 0.5);
  EXPECT_EQ(read_as<uint32_t>((*args)[4]), 1000u);
  EXPECT_EQ(read_as<int64_t>((*args)[5]), 1000);
  EXPECT_EQ(read_as<int32_t>((*args)[6]), -1);
}

TEST(Marshal, MismatchesAreLaunchErrors) {
  auto task = make_task();
  auto plan =
      make_launch_plan(answer_of("// launch: k<<<1, 1>>>(x, alpha, n)\n"), task, task.params, {});
  ASSERT_TRUE(plan.has_value()) << plan.status().message();
  const auto& l = plan->launches[0];
  auto count = marshal_args(l, {param(".u64", 8)}, {1, 2}, {});
  ASSERT_FALSE(count.has_value());
  EXPECT_NE(count.status().message().find("takes 1 parameters but the launch line passes 3"),
            std::string::npos);
  auto ptr = marshal_args(l, {param(".f32", 4), param(".f32", 4), param(".s32", 4)}, {1, 2}, {});
  ASSERT_FALSE(ptr.has_value());
  EXPECT_NE(ptr.status().message().find("a buffer is passed"), std::string::npos);
  auto flt = marshal_args(l, {param(".u64", 8), param(".s32", 4), param(".s32", 4)}, {1, 2}, {});
  ASSERT_FALSE(flt.has_value());
  EXPECT_NE(flt.status().message().find("a float is passed"), std::string::npos);
  auto narrow = marshal_args(l, {param(".u64", 8), param(".f32", 4), param(".s8", 1)}, {1, 2}, {});
  ASSERT_FALSE(narrow.has_value());
  EXPECT_NE(narrow.status().message().find("does not fit"), std::string::npos);
  auto agg = marshal_args(l, {param(".u64", 8), param(".f32", 4), param(".b8", 16)}, {1, 2}, {});
  ASSERT_FALSE(agg.has_value());
  EXPECT_NE(agg.status().message().find("aggregate"), std::string::npos);
}

}  // namespace
}  // namespace leap::sandbox
