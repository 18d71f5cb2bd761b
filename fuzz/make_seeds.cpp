// Writes the generated part of the seed corpora (fuzz/corpus/): task JSONL lines and reference
// answers from the committed suites, worker frames made by the real encoder and frame writer,
// small safetensors files made by the real writer, and PTX made by NVRTC from the references
// (skipped with a note when this build has no NVRTC). The hand-written seeds (configs, edge
// cases) are committed beside them. Run: leap_fuzz_seeds SOURCE_DIR OUT_DIR.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/fs_util.h"
#include "model/safetensors.h"
#include "sandbox/answer.h"
#include "sandbox/nvrtc_compiler.h"
#include "sandbox/wire.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace {

namespace fs = std::filesystem;
using namespace leap;

// Tasks whose references cover the kernel families: elementwise, vectorised, half/bfloat16
// conversions, reductions with shared memory and shuffles, atomics, tiling, scans, stencils.
const std::set<std::string> kSeedTasks = {
    "L1/relu",        "L1/scale_vec4",     "L1/f32_to_f16",    "L1/gelu_bf16",
    "L1/sum",         "L1/max_reduce",     "L1/argmax_rows",   "L1/histogram",
    "L1/softmax",     "L1/layernorm",      "L1/transpose",     "L1/matmul",
    "L1/prefix_sum",  "L1/conv1d",         "L1/maxpool2d",     "L2/matmul_f16_bias",
    "L2/swiglu_bf16", "L2/dequant_matvec", "L2/scaled_softmax"};

std::string file_name(const std::string& task_id) {
  std::string s = task_id;
  for (char& c : s)
    if (c == '/') c = '_';
  return s;
}

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  if (auto st = write_file_atomic(path.string(), bytes); !st.ok()) {
    std::fprintf(stderr, "leap_fuzz_seeds: %s\n", st.message().c_str());
    std::exit(1);
  }
}

// A whole frame as write_frame puts it on the channel.
std::string frame_bytes(sandbox::wire::FrameType type, std::string_view payload) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::exit(1);
  if (!sandbox::wire::write_frame(fds[0], type, payload).ok()) std::exit(1);
  ::close(fds[0]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[1], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fds[1]);
  return out;
}

void write_wire_seeds(const tasks::Task& task, const std::string& code, const fs::path& dir) {
  using sandbox::wire::FrameType;
  sandbox::JobRequest request;
  request.id = 7;
  request.task = task;
  request.code = code;
  request.trials = {{20260801, 0, tasks::SizeSet::kCpu}, {20260801, 1, tasks::SizeSet::kCpu}};
  const std::string name = file_name(task.id);
  write(dir / (name + "_request"),
        frame_bytes(FrameType::kRequest, sandbox::wire::encode_request(request)));

  sandbox::JobReport ok;
  ok.compile_ms = 12.5;
  ok.exec_ms = 3.25;
  auto buffers = tasks::generate_inputs(task, task.cpu_params, 20260801, 0);
  if (!buffers) std::exit(1);
  std::vector<tasks::BufferData> outputs;
  for (auto& b : *buffers) {
    if (b.role == tasks::Role::kIn) continue;
    // The first few elements only: seeds stay small, and a report's sizes are not checked here.
    b.elements = std::min<int64_t>(b.elements, 8);
    b.bytes.resize(static_cast<size_t>(b.elements) * tasks::dtype_size(b.dtype));
    outputs.push_back(std::move(b));
  }
  ok.outputs = {outputs, outputs};
  ok.candidate_ms = 0.5;
  std::string stream = frame_bytes(FrameType::kReady, "cpu") +
                       frame_bytes(FrameType::kCompiled, "") +
                       frame_bytes(FrameType::kReport, sandbox::wire::encode_report(ok));
  write(dir / (name + "_report_ok"), stream);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: leap_fuzz_seeds SOURCE_DIR OUT_DIR\n");
    return 2;
  }
  const fs::path src = argv[1], out = argv[2];
  sandbox::NvrtcCompiler compiler;
  if (!sandbox::nvrtc_available())
    std::fprintf(stderr, "leap_fuzz_seeds: no NVRTC in this build: PTX seeds left as they are\n");
  int written_ptx = 0;
  for (const char* suite_file : {"tasks/level1.jsonl", "tasks/level2.jsonl"}) {
    auto text = read_file((src / suite_file).string());
    auto suite =
        text ? tasks::parse_suite(*text, suite_file) : Expected<tasks::Suite>(text.status());
    if (!suite) {
      std::fprintf(stderr, "leap_fuzz_seeds: %s\n", suite.status().message().c_str());
      return 1;
    }
    // Suite seeds: single task lines, as written in the suite file.
    size_t line_start = 0;
    for (const auto& task : suite->tasks) {
      const size_t line_end = text->find('\n', line_start);
      const std::string line = text->substr(line_start, line_end - line_start + 1);
      line_start = line_end + 1;
      if (!kSeedTasks.count(task.id)) continue;
      const std::string name = file_name(task.id);
      write(out / "suite" / (name + ".jsonl"), line);
      write(out / "answer" / (name + ".md"), task.reference);
      auto answer = sandbox::parse_answer(task.reference);
      if (!answer) return 1;
      write_wire_seeds(task, answer->source, out / "wire");
      if (!sandbox::nvrtc_available()) continue;
      sandbox::CompileOptions options;
      for (const auto& launch : answer->launches) options.name_expressions.push_back(launch.kernel);
      auto compiled = compiler.compile(answer->source, options);
      if (!compiled->ok) {
        std::fprintf(stderr, "leap_fuzz_seeds: %s: %s\n", task.id.c_str(), compiled->log.c_str());
        return 1;
      }
      write(out / "ptx" / (name + ".ptx"), compiled->ptx);
      ++written_ptx;
    }
  }
  // Safetensors: fp32 tensors by the real writer (header, padding, data).
  const float w[6] = {1, -2, 3.5f, 0, 1e-3f, -7};
  const std::string st_dir = (out / "safetensors").string();
  fs::create_directories(st_dir);
  if (!model::write_safetensors(st_dir + "/two_tensors.safetensors",
                                {{"wte", {2, 2}, w}, {"ln_f.bias", {2}, w + 4}})
           .ok() ||
      !model::write_safetensors(st_dir + "/scalar.safetensors", {{"s", {}, w}}).ok())
    return 1;
  std::printf("leap_fuzz_seeds: wrote seeds under %s (%d PTX files)\n", out.c_str(), written_ptx);
  return 0;
}
