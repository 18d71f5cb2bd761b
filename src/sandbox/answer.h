// Answers (docs/design.md, Answer format): the last ```cuda block of a completion, its `// launch:`
// and `// scratch:` lines, and the rule that it holds device code only.
//
// Everything here is syntax: nothing is evaluated against a task. A failure is the answer's
// fault and maps to FORMAT_ERROR; its message is written for the policy to read (it names the
// line and says what the format expects). Evaluating the lines over a task's params is
// launch_plan.h's job (LAUNCH_ERROR).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tasks/task.h"

namespace leap::sandbox {

// `// launch: NAME<<<GRID, BLOCK[, SMEM]>>>(ARGS)`, split but not evaluated.
struct LaunchSpec {
  int line = 0;                    // 1-based line inside the code block
  std::string kernel;              // "relu_mul" or a template instance "reduce<256>"
  std::vector<std::string> grid;   // 1 to 3 integer expressions (x, y, z)
  std::vector<std::string> block;  // 1 to 3 integer expressions
  std::string shared_bytes;        // dynamic shared memory expression; empty means 0
  std::vector<std::string> args;   // buffer names, scratch names, float params, expressions
};

// `// scratch: NAME DTYPE[EXPR]`: a zeroed device buffer of EXPR elements.
struct ScratchSpec {
  int line = 0;
  std::string name;
  tasks::DType dtype = tasks::DType::kF32;
  std::string count;  // element count expression
};

struct Answer {
  std::string source;  // the code block, compiled as is (launch lines are comments)
  std::vector<LaunchSpec> launches;
  std::vector<ScratchSpec> scratch;
};

// The text of the last ```cuda fenced block. invalid_input when there is none or it is not closed.
Expected<std::string> extract_code_block(std::string_view completion);

// Rejects host code in a code block: a main function, host runtime calls (cudaMalloc,
// cudaMemcpy, ...), a `<<<` launch in code, and #include of headers other than the CUDA device
// headers NVRTC resolves. Comments and string literals are ignored.
Status check_device_only(std::string_view code);
// The headers check_device_only lets an answer #include (each compiles under NVRTC: tested).
std::span<const std::string_view> allowed_device_headers();

// The code with comments and the contents of string/char literals replaced by spaces (newlines
// kept), so scans for names and constructs see code only.
std::string blank_comments_and_strings(std::string_view code);

// extract_code_block + parse_answer_code.
Expected<Answer> parse_answer(std::string_view completion);
// check_device_only + the launch and scratch lines (at least one launch) of a code block.
Expected<Answer> parse_answer_code(std::string_view code);

// Parses one launch line's text after "launch:", e.g. "k<<<cdiv(n,256), 256>>>(a, n)".
Expected<LaunchSpec> parse_launch_line(std::string_view text);
// Parses one scratch line's text after "scratch:", e.g. "tmp f32[cdiv(n, 256)]".
Expected<ScratchSpec> parse_scratch_line(std::string_view text);

}  // namespace leap::sandbox
