// Answer extraction and the launch/scratch grammar: what is accepted, and that every rejection
// says what was wrong (these messages are the policy's feedback).
#include <gtest/gtest.h>

#include "sandbox/answer.h"

namespace leap::sandbox {
namespace {

std::string block(const std::string& code) {
  return "Here it is.\n```cuda\n" + code + "```\n";
}

const char* kRelu = R"(__global__ void relu(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i], 0.f);  // printf("<<<") in a comment is fine
}
// scratch: tmp f32[cdiv(n, 256)]
// launch: relu<<<cdiv(n, 256), 256>>>(a, out, n)
)";

TEST(AnswerExtract, TakesTheLastCudaBlock) {
  std::string text = "```cuda\nfirst\n```\nthen\n```python\nx\n```\n```cuda\nsecond\n```\ntrailing";
  auto code = extract_code_block(text);
  ASSERT_TRUE(code.has_value()) << code.status().message();
  EXPECT_EQ(*code, "second\n");
}

TEST(AnswerExtract, NoBlockOrUnclosedIsAnError) {
  auto none = extract_code_block("just prose, and ```python\nx\n```");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("no ```cuda code block"), std::string::npos);
  auto open = extract_code_block("```cuda\n__global__ void k() {}\n");
  ASSERT_FALSE(open.has_value());
  EXPECT_NE(open.status().message().find("not closed"), std::string::npos);
}

TEST(AnswerParse, LaunchAndScratchLines) {
  auto a = parse_answer(block(kRelu));
  ASSERT_TRUE(a.has_value()) << a.status().message();
  ASSERT_EQ(a->launches.size(), 1u);
  const auto& l = a->launches[0];
  EXPECT_EQ(l.kernel, "relu");
  EXPECT_EQ(l.grid, std::vector<std::string>{"cdiv(n, 256)"});
  EXPECT_EQ(l.block, std::vector<std::string>{"256"});
  EXPECT_EQ(l.args, (std::vector<std::string>{"a", "out", "n"}));
  EXPECT_EQ(l.line, 6);
  ASSERT_EQ(a->scratch.size(), 1u);
  EXPECT_EQ(a->scratch[0].name, "tmp");
  EXPECT_EQ(a->scratch[0].dtype, tasks::DType::kF32);
  EXPECT_EQ(a->scratch[0].count, "cdiv(n, 256)");
}

TEST(AnswerParse, TuplesTemplatesSharedMemory) {
  auto l = parse_launch_line(
      "tile<16, 4><<<(cdiv(n, 16), (m+1)/2), (16, 16), 2*16*16*4>>>(a, b, alpha, (n))");
  ASSERT_TRUE(l.has_value()) << l.status().message();
  EXPECT_EQ(l->kernel, "tile<16, 4>");
  EXPECT_EQ(l->grid, (std::vector<std::string>{"cdiv(n, 16)", "(m+1)/2"}));
  EXPECT_EQ(l->block, (std::vector<std::string>{"16", "16"}));
  EXPECT_EQ(l->shared_bytes, "2*16*16*4");
  EXPECT_EQ(l->args, (std::vector<std::string>{"a", "b", "alpha", "(n)"}));
  // A parenthesised expression is not a tuple.
  auto p = parse_launch_line("k<<<(n + 255) / 256, (256)>>>()");
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_EQ(p->grid, std::vector<std::string>{"(n + 255) / 256"});
  EXPECT_EQ(p->block, std::vector<std::string>{"(256)"});
  EXPECT_TRUE(p->args.empty());
}

TEST(AnswerParse, BadLaunchLinesSayWhy) {
  struct Case {
    const char* line;
    const char* why;
  } cases[] = {
      {"k<<<1>>>(a)", "has 1 parts"},
      {"k<<<1, 2, 3, 4>>>(a)", "has 4 parts"},
      {"k<<<1, 256(a)", "no '>>>'"},
      {"k(a, n)", "no '<<<'"},
      {"3k<<<1, 1>>>(a)", "is not a name"},
      {"k<<<1, 1>>> a, n", "in parentheses"},
      {"k<<<1, 1>>>(a,, n)", "argument is empty"},
      {"k<<<(1,2,3,4), 1>>>(a)", "at most 3"},
      {"k<<<1, 1>>>(a)(b)", "text after the arguments"},
      {"k<<<(n, 1>>>(a)", "unbalanced"},
  };
  for (const auto& c : cases) {
    auto r = parse_launch_line(c.line);
    ASSERT_FALSE(r.has_value()) << c.line;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos)
        << c.line << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find("// launch: NAME<<<GRID, BLOCK[, SMEM]>>>(ARGS)"),
              std::string::npos);
  }
}

TEST(AnswerParse, BadScratchLinesSayWhy) {
  EXPECT_FALSE(parse_scratch_line("tmp float[n]").has_value());
  EXPECT_FALSE(parse_scratch_line("tmp f32").has_value());
  EXPECT_FALSE(parse_scratch_line("1tmp f32[n]").has_value());
  EXPECT_FALSE(parse_scratch_line("tmp f32[]").has_value());
  auto ok = parse_scratch_line("acc  bf16[ m * 2 ]");
  ASSERT_TRUE(ok.has_value()) << ok.status().message();
  EXPECT_EQ(ok->dtype, tasks::DType::kBF16);
  EXPECT_EQ(ok->count, "m * 2");
}

TEST(AnswerParse, NoLaunchLineOrMissingColon) {
  auto none = parse_answer(block("__global__ void k(float* o) { o[0] = 1; }\n"));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("no launch line"), std::string::npos);
  auto colon = parse_answer(block("__global__ void k(float* o) {}\n// launch k<<<1, 1>>>(o)\n"));
  ASSERT_FALSE(colon.has_value());
  EXPECT_NE(colon.status().message().find("line 2"), std::string::npos);
  EXPECT_NE(colon.status().message().find("no ':'"), std::string::npos);
}

TEST(DeviceOnly, RejectsHostCode) {
  struct Case {
    const char* code;
    const char* why;
  } cases[] = {
      {"int main() { return 0; }\n", "main()"},
      {"int main (int argc, char** argv) { return 0; }\n", "main()"},
      {"void host() { float* p; cudaMalloc(&p, 4); }\n", "cudaMalloc"},
      {"void host(float* d, float* h) { cudaMemcpy(d, h, 4, cudaMemcpyHostToDevice); }\n",
       "cudaMemcpy"},
      {"__global__ void k() {}\nvoid go() { k<<<1, 1>>>(); }\n", "line 2: a kernel launch"},
      {"#include <stdio.h>\n__global__ void k() {}\n", "'stdio.h' is not allowed"},
      {"#include \"../../etc/passwd\"\n", "is not allowed"},
      {"  #  include <vector>\n", "'vector' is not allowed"},
  };
  for (const auto& c : cases) {
    Status st = check_device_only(c.code);
    ASSERT_FALSE(st.is_ok()) << c.code;
    EXPECT_NE(st.message().find(c.why), std::string::npos) << st.message();
  }
}

TEST(DeviceOnly, AcceptsDeviceCodeCommentsAndStrings) {
  const char* code = R"(#include <cuda_fp16.h>
#include "cuda_bf16.h"
// int main() { cudaMalloc(...); k<<<1,1>>>(); }   (a comment: ignored)
/* #include <stdio.h> */
__device__ int domain(int x) { return x; }  // 'domain' is not 'main'
__global__ void k(float* o) { printf("cudaMalloc <<<main()>>>\n"); o[0] = domain(1); }
// launch: k<<<1, 1>>>(o)
)";
  EXPECT_TRUE(check_device_only(code).is_ok()) << check_device_only(code).message();
}

}  // namespace
}  // namespace leap::sandbox
