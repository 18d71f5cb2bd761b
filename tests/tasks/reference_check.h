// A task's reference run through the sandbox's CPU path (NVRTC to PTX, the PTX interpreter) on
// its cpu_params, compared with a host implementation of its prompt: shared by
// test_reference_semantics.cpp (level1/level2) and test_family_semantics.cpp (families).
// A host implementation reads every buffer as doubles and writes the outputs in double
// precision; each host value is first rounded into the output dtype, as a perfect kernel would
// store it, then compared within the task's atol + rtol * |want|.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "sandbox/cpu_executor.h"
#include "sandbox/job_runner.h"
#include "sandbox/verdict.h"
#include "tasks/dtype_convert.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace leap::tasks {

using Vec = std::vector<double>;
using Bufs = std::map<std::string, Vec>;

struct Ctx {
  const Params& p;
  Bufs& b;
  int64_t i(const char* name) const { return std::get<int64_t>(p.at(name)); }
  double f(const char* name) const { return static_cast<float>(std::get<double>(p.at(name))); }
  Vec& operator[](const char* name) const { return b[name]; }
  // Makes an output buffer of n elements.
  Vec& out(const char* name, int64_t n) const { return b[name] = Vec(static_cast<size_t>(n), 0.0); }
};
using HostFn = std::function<void(const Ctx&)>;

// `want` as a perfect kernel would store it in `dtype`.
inline Vec stored_values(const Vec& want, DType dtype) {
  Vec out(want.size());
  std::vector<uint8_t> cell(8);
  for (size_t i = 0; i < want.size(); ++i) {
    write_element(cell.data(), dtype, 0, want[i]);
    out[i] = read_element(cell.data(), dtype, 0);
  }
  return out;
}

// A tolerance wide enough to accept an output that computes nothing is a reward the policy can
// take without solving the task. Writing zeros everywhere, or the output's own mean everywhere
// (which needs no per-element work), must fail on most elements: on at least half of those whose
// value is not zero, and on at least half of all of them. A softmax over wide rows in bf16 with an
// atol of 1e-2 accepted both almost everywhere: its outputs are about 1/cols.
inline void expect_tolerance_rejects_trivial_outputs(const Task& t, const std::string& name,
                                                     const Vec& w) {
  if (w.size() < 2) return;  // a single value: its mean is itself
  double mean = 0;
  size_t nonzero = 0;
  for (double v : w) {
    mean += v / static_cast<double>(w.size());
    nonzero += v != 0.0;
  }
  const auto rejected = [&](double constant, bool nonzero_only) {
    size_t n = 0;
    for (double v : w)
      if ((!nonzero_only || v != 0.0) && !(std::fabs(constant - v) <= t.atol + t.rtol * std::fabs(v))) ++n;
    return n;
  };
  const size_t zeros_rejected = rejected(0.0, true);
  EXPECT_GE(2 * zeros_rejected, nonzero)
      << t.id << " " << name << ": atol " << t.atol << ", rtol " << t.rtol << " accept zeros at "
      << nonzero - zeros_rejected << " of the " << nonzero
      << " nonzero outputs; scale the tolerance to the outputs' size";
  const size_t mean_rejected = rejected(mean, false);
  EXPECT_GE(2 * mean_rejected, w.size())
      << t.id << " " << name << ": atol " << t.atol << ", rtol " << t.rtol << " accept the mean ("
      << mean << ") at " << w.size() - mean_rejected << " of " << w.size()
      << " outputs; scale the tolerance to the outputs' spread";
}

// The host implementation's buffers for `t` at `params` on the inputs of trial `trial` (seed 5,
// as check_reference draws them): inputs as read, outputs as a perfect kernel would store them.
inline Bufs host_buffers(const Task& t, const HostFn& fn, const Params& params, uint64_t trial) {
  Bufs bufs;
  auto inputs = generate_inputs(t, params, 5, trial);
  EXPECT_TRUE(inputs) << t.id;
  if (!inputs) return bufs;
  for (const auto& b : *inputs) {
    Vec v(static_cast<size_t>(b.elements));
    for (size_t i = 0; i < v.size(); ++i) v[i] = read_element(b.bytes.data(), b.dtype, i);
    bufs[b.name] = std::move(v);
  }
  fn(Ctx{params, bufs});
  for (const auto& spec : t.buffers)
    if (spec.role != Role::kIn) bufs[spec.name] = stored_values(bufs[spec.name], spec.dtype);
  return bufs;
}

// Runs the reference of `t` on its cpu_params through the CPU sandbox path and compares every
// output with the host implementation, over `trials` trials.
inline void check_reference(const Task& t, const HostFn& fn, int trials) {
  auto compiler = std::make_shared<sandbox::NvrtcCompiler>(sandbox::CompilerConfig{});
  sandbox::CpuExecutor executor(compiler, sandbox::CpuExecutorOptions{});
  sandbox::JobRunner runner(executor);
  {
    sandbox::JobRequest req;
    req.task = t;
    req.code = t.reference.substr(t.reference.find('\n') + 1);
    req.code = req.code.substr(0, req.code.rfind("```"));
    for (int k = 0; k < trials; ++k)
      req.trials.push_back({.seed = 5, .trial = static_cast<uint64_t>(k), .sizes = SizeSet::kCpu});
    sandbox::JobReport rep = runner.run(req);
    ASSERT_TRUE(rep.outcome.ok()) << sandbox::verdict_name(rep.outcome.verdict) << ": "
                                  << rep.outcome.message;
    ASSERT_EQ(rep.outputs.size(), req.trials.size());
    for (size_t trial = 0; trial < req.trials.size(); ++trial) {
      Bufs bufs = host_buffers(t, fn, t.cpu_params, req.trials[trial].trial);
      ASSERT_FALSE(bufs.empty()) << t.id << ": no inputs";
      for (const auto& got : rep.outputs[trial]) {
        const Vec& want = bufs[got.name];  // as a perfect kernel would store it
        ASSERT_EQ(want.size(), static_cast<size_t>(got.elements)) << got.name;
        int bad = 0;
        double max_err = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          const double w = want[i];
          const double g = read_element(got.bytes.data(), got.dtype, i);
          const double err = std::fabs(g - w);
          max_err = std::max(max_err, err);
          if (!(err <= t.atol + t.rtol * std::fabs(w)) && bad++ < 3)
            ADD_FAILURE() << t.id << " trial " << trial << " " << got.name << "[" << i
                          << "] = " << g << ", want " << w;
        }
        EXPECT_EQ(bad, 0) << t.id << " " << got.name << ": " << bad << " mismatches, max error "
                          << max_err;
        expect_tolerance_rejects_trivial_outputs(t, got.name, want);
      }
    }
  }
}

}  // namespace leap::tasks
