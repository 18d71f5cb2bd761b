// The committed suites (tasks/level1.jsonl, tasks/level2.jsonl): they load, they have the
// promised size and split fractions, their interpreter sizes are small and ragged, and every
// reference answer compiles with NVRTC to PTX at the project's fixed target (compute_80) with
// each launch line's kernel resolving to an entry whose parameter count matches the launch's
// arguments, and every launch dimension, shared-memory size and scratch size evaluating under
// both parameter sets. Running the references is the sandbox's test; this one is independent of it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tasks/expr.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"
#include "task_size_checks.h"

#ifdef LEAP_TEST_NVRTC
#include <nvrtc.h>
#endif

namespace leap::tasks {
namespace {

std::string suite_path(int level) {
  return std::string(LEAP_SOURCE_DIR) + "/tasks/level" + std::to_string(level) + ".jsonl";
}

Suite load_or_die(int level) {
  auto s = load_suite(suite_path(level));
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(s).value() : Suite{};
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  for (auto& x : out) {
    x.erase(0, x.find_first_not_of(" \t"));
    x.erase(x.find_last_not_of(" \t") + 1);
  }
  return out;
}

// A dimension is an expression or a "(x, y[, z])" tuple: returns its components.
std::vector<std::string> dims_of(const std::string& s) {
  if (!s.empty() && s.front() == '(' && s.back() == ')') {
    auto inner = split_top(s.substr(1, s.size() - 2));
    if (inner.size() > 1) return inner;
  }
  return {s};
}

struct Launch {
  std::string kernel;
  std::vector<std::string> config;  // grid, block[, smem]
  std::vector<std::string> args;
};

struct Parsed {
  std::string code;
  std::vector<Launch> launches;
  std::vector<std::pair<std::string, std::string>> scratch;  // name, count expression
};

Parsed parse_reference(const std::string& ref) {
  Parsed p;
  size_t start = ref.rfind("```cuda");
  size_t body = ref.find('\n', start) + 1;
  p.code = ref.substr(body, ref.find("```", body) - body);
  static const std::regex launch_re(R"(^\s*// launch:\s*(.+?)<<<(.*)>>>\((.*)\)\s*$)");
  static const std::regex scratch_re(R"(^\s*// scratch:\s*(\w+)\s+(\w+)\[(.*)\]\s*$)");
  size_t pos = 0;
  while (pos < p.code.size()) {
    size_t nl = p.code.find('\n', pos);
    std::string line = p.code.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? p.code.size() : nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, launch_re)) {
      p.launches.push_back({m[1].str(), split_top(m[2].str()), split_top(m[3].str())});
    } else if (std::regex_match(line, m, scratch_re)) {
      EXPECT_TRUE(parse_dtype(m[2].str())) << line;
      p.scratch.emplace_back(m[1].str(), m[3].str());
    } else {
      EXPECT_EQ(line.find("// launch:"), std::string::npos) << "malformed launch line: " << line;
      EXPECT_EQ(line.find("// scratch:"), std::string::npos) << "malformed scratch line: " << line;
    }
  }
  return p;
}

TEST(CommittedSuites, SizesAndSplits) {
  for (int level : {1, 2}) {
    Suite s = load_or_die(level);
    const double n = static_cast<double>(s.tasks.size());
    const double held = static_cast<double>(select_tasks(s, Split::kHeldout).size());
    if (level == 1) {
      EXPECT_GE(s.tasks.size(), 40u);
      EXPECT_GE(held / n, 0.15);  // about a fifth held out
      EXPECT_LE(held / n, 0.25);
    } else {
      EXPECT_GE(s.tasks.size(), 15u);
      EXPECT_GE(held / n, 0.4);  // about half held out
      EXPECT_LE(held / n, 0.6);
    }
    for (const auto& t : s.tasks) {
      EXPECT_EQ(t.level, level) << t.id;
      const std::string prefix = fmt::format("L{}/", level);
      EXPECT_EQ(t.id.rfind(prefix, 0), 0u) << t.id;
      expect_suite_sizes(t);
      // The prompt names every buffer and parameter the launch lines may use.
      for (const auto& b : t.buffers)
        EXPECT_NE(t.prompt.find(b.name), std::string::npos) << t.id << " " << b.name;
      for (const auto& [name, v] : t.params)
        EXPECT_NE(t.prompt.find(name), std::string::npos) << t.id << " " << name;
    }
  }
}

TEST(CommittedSuites, LaunchLinesEvaluateUnderBothParameterSets) {
  for (int level : {1, 2}) {
    Suite s = load_or_die(level);
    for (const auto& t : s.tasks) {
      Parsed p = parse_reference(t.reference);
      ASSERT_FALSE(p.launches.empty()) << t.id;
      std::set<std::string> names;
      for (const auto& b : t.buffers) names.insert(b.name);
      for (const auto& sc : p.scratch) names.insert(sc.first);
      for (const Params* params : {&t.params, &t.cpu_params}) {
        for (const auto& sc : p.scratch) {
          auto v = eval_int_expr(sc.second, *params);
          ASSERT_TRUE(v) << t.id << ": " << v.status().message();
          EXPECT_GT(*v, 0) << t.id;
        }
        for (const auto& l : p.launches) {
          ASSERT_GE(l.config.size(), 2u) << t.id;
          ASSERT_LE(l.config.size(), 3u) << t.id;
          int64_t threads = 1;
          for (size_t c = 0; c < l.config.size(); ++c) {
            const auto dims = c < 2 ? dims_of(l.config[c]) : std::vector<std::string>{l.config[c]};
            for (const auto& d : dims) {
              auto v = eval_int_expr(d, *params);
              ASSERT_TRUE(v) << t.id << ": " << v.status().message();
              EXPECT_GE(*v, c < 2 ? 1 : 0) << t.id << " " << d;
              if (c == 1) threads *= *v;
              if (c == 2) {
                EXPECT_LE(*v, 48 * 1024) << t.id << ": dynamic shared memory";
              }
            }
          }
          EXPECT_LE(threads, 1024) << t.id << " " << l.kernel;
          for (const auto& a : l.args) {
            if (names.count(a)) continue;
            auto it = params->find(a);
            if (it != params->end() && std::holds_alternative<double>(it->second)) continue;
            auto v = eval_int_expr(a, *params);
            EXPECT_TRUE(v) << t.id << ": argument '" << a << "': " << v.status().message();
          }
        }
      }
    }
  }
}

#ifdef LEAP_TEST_NVRTC
// Number of parameters of `.entry NAME(` in `ptx`, or -1 when there is no such entry.
int entry_param_count(const std::string& ptx, const std::string& lowered) {
  size_t at = ptx.find(".entry " + lowered + "(");
  if (at == std::string::npos) return -1;
  size_t close = ptx.find(')', at);
  int count = 0;
  for (size_t p = ptx.find(".param", at); p != std::string::npos && p < close;
       p = ptx.find(".param", p + 1))
    ++count;
  return count;
}

TEST(CommittedSuites, EveryReferenceCompilesToPtx) {
  for (int level : {1, 2}) {
    Suite s = load_or_die(level);
    for (const auto& t : s.tasks) {
      Parsed p = parse_reference(t.reference);
      nvrtcProgram prog;
      ASSERT_EQ(nvrtcCreateProgram(&prog, p.code.c_str(), "reference.cu", 0, nullptr, nullptr),
                NVRTC_SUCCESS);
      std::set<std::string> kernels;
      for (const auto& l : p.launches) kernels.insert(l.kernel);
      for (const auto& k : kernels)
        ASSERT_EQ(nvrtcAddNameExpression(prog, k.c_str()), NVRTC_SUCCESS) << t.id;
      const std::string include = std::string("-I") + LEAP_TEST_CUDA_INCLUDE;
      const char* opts[] = {"-std=c++17", "--gpu-architecture=compute_80", include.c_str()};
      nvrtcResult rc = nvrtcCompileProgram(prog, 3, opts);
      size_t log_size = 0;
      nvrtcGetProgramLogSize(prog, &log_size);
      std::string log(log_size, '\0');
      nvrtcGetProgramLog(prog, log.data());
      EXPECT_EQ(rc, NVRTC_SUCCESS) << t.id << ":\n" << log;
      if (rc == NVRTC_SUCCESS) {
        EXPECT_EQ(log.find("warning"), std::string::npos) << t.id << ":\n" << log;
        size_t ptx_size = 0;
        nvrtcGetPTXSize(prog, &ptx_size);
        std::string ptx(ptx_size, '\0');
        nvrtcGetPTX(prog, ptx.data());
        for (const auto& l : p.launches) {
          const char* lowered = nullptr;
          ASSERT_EQ(nvrtcGetLoweredName(prog, l.kernel.c_str(), &lowered), NVRTC_SUCCESS)
              << t.id << " " << l.kernel;
          EXPECT_EQ(entry_param_count(ptx, lowered), static_cast<int>(l.args.size()))
              << t.id << ": kernel " << l.kernel
              << " takes a different number of arguments than its launch line";
        }
      }
      nvrtcDestroyProgram(&prog);
    }
  }
}
#endif

}  // namespace
}  // namespace leap::tasks
