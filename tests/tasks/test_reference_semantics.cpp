// Every reference answer of the committed suites computes what its prompt says. Each task has an
// independent host implementation here, written from the prompt in double precision; the
// reference runs through the sandbox's CPU path (NVRTC to PTX, the PTX interpreter) on the
// task's cpu_params with generated inputs, and its outputs must match the host result within the
// task's tolerances (the host result is first rounded into the output dtype, as a perfect kernel
// would store it). A task without a host implementation fails, so none is skipped silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/answer.h"
#include "sandbox/cpu_executor.h"
#include "sandbox/job_runner.h"
#include "tasks/dtype_convert.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"
#include "reference_check.h"

namespace leap::tasks {
namespace {

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}
double gelu_tanh(double v) {
  return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

HostFn unary(double (*fn)(double)) {
  return [fn](const Ctx& c) {
    const Vec& x = c["x"];
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k) o[k] = fn(x[k]);
  };
}
HostFn binary(double (*fn)(double, double)) {
  return [fn](const Ctx& c) {
    const Vec &a = c["a"], &b = c["b"];
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k) o[k] = fn(a[k], b[k]);
  };
}
// Row-wise map over [rows, cols] with a per-row function writing out's row.
HostFn per_row(const char* rows, const char* cols,
               std::function<void(const double*, double*, int64_t, const Ctx&)> fn) {
  return [=](const Ctx& c) {
    const int64_t R = c.i(rows), C = c.i(cols);
    Vec& o = c.out("out", R * C);
    for (int64_t r = 0; r < R; ++r) fn(&c["x"][r * C], &o[r * C], C, c);
  };
}
HostFn row_reduce(std::function<double(const double*, int64_t)> fn) {
  return [=](const Ctx& c) {
    const int64_t R = c.i("rows"), C = c.i("cols");
    Vec& o = c.out("out", R);
    for (int64_t r = 0; r < R; ++r) o[r] = fn(&c["x"][r * C], C);
  };
}
void softmax_row(const double* x, double* o, int64_t n, double scale) {
  double m = -INFINITY, s = 0;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * x[j]);
  for (int64_t j = 0; j < n; ++j) s += std::exp(scale * x[j] - m);
  for (int64_t j = 0; j < n; ++j) o[j] = std::exp(scale * x[j] - m) / s;
}
double sum_of(const double* x, int64_t n) {
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j];
  return s;
}
double sumsq_of(const double* x, int64_t n) {
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j] * x[j];
  return s;
}
// C[m,n] = A[m,k] B[k,n] (+ epilogue on (value, col)).
Vec matmul(const Vec& A, const Vec& B, int64_t m, int64_t n, int64_t k) {
  Vec C(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) C[i * n + j] += A[i * k + p] * B[p * n + j];
  return C;
}
void layernorm_row(const double* s, double* o, int64_t d, const Vec& g, const Vec& b, double eps) {
  double mean = sum_of(s, d) / d, var = 0;
  for (int64_t c = 0; c < d; ++c) var += (s[c] - mean) * (s[c] - mean);
  var /= d;
  for (int64_t c = 0; c < d; ++c) o[c] = (s[c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
}

std::map<std::string, HostFn> host_implementations() {
  std::map<std::string, HostFn> h;
  // ---- level 1: elementwise and activations
  h["L1/relu"] = unary([](double v) { return std::max(v, 0.0); });
  h["L1/gelu_tanh"] = unary(gelu_tanh);
  h["L1/silu"] = unary([](double v) { return v * sigmoid(v); });
  h["L1/sigmoid"] = unary(sigmoid);
  h["L1/softplus"] = unary([](double v) { return v > 20 ? v : std::log1p(std::exp(v)); });
  h["L1/exp"] = unary([](double v) { return std::exp(v); });
  h["L1/tanh"] = unary([](double v) { return std::tanh(v); });
  h["L1/rsqrt"] = unary([](double v) { return 1 / std::sqrt(v); });
  h["L1/abs_log"] = unary([](double v) { return std::log(std::fabs(v) + 1); });
  h["L1/add"] = binary([](double a, double b) { return a + b; });
  h["L1/mul"] = binary([](double a, double b) { return a * b; });
  h["L1/div"] = binary([](double a, double b) { return a / b; });
  h["L1/maximum"] = binary([](double a, double b) { return std::max(a, b); });
  h["L1/relu_mul"] = binary([](double a, double b) { return std::max(a, 0.0) * b; });
  h["L1/axpy"] = [](const Ctx& c) {
    Vec& y = c["y"];
    for (size_t k = 0; k < y.size(); ++k) y[k] = c.f("alpha") * c["x"][k] + y[k];
  };
  h["L1/scale_shift"] = [](const Ctx& c) {
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k) o[k] = c.f("alpha") * c["x"][k] + c.f("beta");
  };
  h["L1/leaky_relu"] = [](const Ctx& c) {
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k)
      o[k] = c["x"][k] >= 0 ? c["x"][k] : c.f("slope") * c["x"][k];
  };
  h["L1/clamp"] = [](const Ctx& c) {
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k)
      o[k] = std::min(std::max(c["x"][k], c.f("lo")), c.f("hi"));
  };
  h["L1/where"] = [](const Ctx& c) {
    Vec& o = c.out("out", c.i("n"));
    for (size_t k = 0; k < o.size(); ++k) o[k] = c["mask"][k] != 0 ? c["a"][k] : c["b"][k];
  };
  h["L1/scale_vec4"] = [](const Ctx& c) {
    Vec& o = c.out("out", 4 * c.i("n4"));
    for (size_t k = 0; k < o.size(); ++k) o[k] = c.f("alpha") * c["x"][k];
  };
  for (const char* id : {"L1/f32_to_f16", "L1/f16_to_f32", "L1/f32_to_bf16", "L1/bf16_to_f32"})
    h[id] = unary([](double v) { return v; });  // the output dtype's rounding is applied on compare
  h["L1/add_f16"] = binary([](double a, double b) { return a + b; });
  h["L1/gelu_bf16"] = unary(gelu_tanh);
  // ---- reductions
  h["L1/sum"] = [](const Ctx& c) { c.out("out", 1)[0] = sum_of(c["x"].data(), c.i("n")); };
  h["L1/max_reduce"] = [](const Ctx& c) {
    c.out("out", 1)[0] = *std::max_element(c["x"].begin(), c["x"].end());
  };
  h["L1/l2_norm"] = [](const Ctx& c) {
    c.out("out", 1)[0] = std::sqrt(sumsq_of(c["x"].data(), c.i("n")));
  };
  h["L1/dot"] = [](const Ctx& c) {
    double s = 0;
    for (int64_t k = 0; k < c.i("n"); ++k) s += c["a"][k] * c["b"][k];
    c.out("out", 1)[0] = s;
  };
  h["L1/row_sum"] = row_reduce(sum_of);
  h["L1/row_max"] =
      row_reduce([](const double* x, int64_t n) { return *std::max_element(x, x + n); });
  h["L1/row_mean"] = row_reduce([](const double* x, int64_t n) { return sum_of(x, n) / n; });
  h["L1/row_l2norm"] =
      row_reduce([](const double* x, int64_t n) { return std::sqrt(sumsq_of(x, n)); });
  h["L1/argmax_rows"] = row_reduce([](const double* x, int64_t n) {
    return static_cast<double>(std::max_element(x, x + n) - x);
  });
  h["L1/histogram"] = [](const Ctx& c) {
    Vec& o = c.out("out", 256);
    for (double v : c["x"]) o[static_cast<size_t>(v)] += 1;
  };
  // ---- softmax and normalisation
  h["L1/softmax"] = per_row("rows", "cols", [](const double* x, double* o, int64_t n, const Ctx&) {
    softmax_row(x, o, n, 1.0);
  });
  h["L1/log_softmax"] =
      per_row("rows", "cols", [](const double* x, double* o, int64_t n, const Ctx&) {
        double m = *std::max_element(x, x + n), s = 0;
        for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
        for (int64_t j = 0; j < n; ++j) o[j] = x[j] - m - std::log(s);
      });
  h["L1/layernorm"] =
      per_row("rows", "cols", [](const double* x, double* o, int64_t n, const Ctx& c) {
        layernorm_row(x, o, n, c["gamma"], c["beta"], 1e-5);
      });
  h["L1/rmsnorm"] =
      per_row("rows", "cols", [](const double* x, double* o, int64_t n, const Ctx& c) {
        double r = 1 / std::sqrt(sumsq_of(x, n) / n + 1e-6);
        for (int64_t j = 0; j < n; ++j) o[j] = x[j] * r * c["w"][j];
      });
  // ---- matrices
  h["L1/transpose"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), C = c.i("cols");
    Vec& o = c.out("out", R * C);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = 0; q < C; ++q) o[q * R + r] = c["x"][r * C + q];
  };
  h["L1/matvec"] = [](const Ctx& c) {
    const int64_t m = c.i("m"), k = c.i("k");
    Vec& y = c.out("y", m);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < k; ++j) y[r] += c["A"][r * k + j] * c["x"][j];
  };
  h["L1/matmul"] = [](const Ctx& c) {
    c.b["C"] = matmul(c["A"], c["B"], c.i("m"), c.i("n"), c.i("k"));
  };
  h["L1/outer"] = [](const Ctx& c) {
    const int64_t m = c.i("m"), n = c.i("n");
    Vec& o = c.out("out", m * n);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t q = 0; q < n; ++q) o[r * n + q] = c["a"][r] * c["b"][q];
  };
  h["L1/batched_matmul"] = [](const Ctx& c) {
    const int64_t B = c.i("batch"), m = c.i("m"), n = c.i("n"), k = c.i("k");
    Vec& C = c.out("C", B * m * n);
    for (int64_t b = 0; b < B; ++b) {
      Vec A(c["A"].begin() + b * m * k, c["A"].begin() + (b + 1) * m * k);
      Vec Bm(c["B"].begin() + b * k * n, c["B"].begin() + (b + 1) * k * n);
      Vec r = matmul(A, Bm, m, n, k);
      std::copy(r.begin(), r.end(), C.begin() + b * m * n);
    }
  };
  h["L1/embedding_gather"] = [](const Ctx& c) {
    const int64_t t = c.i("tokens"), d = c.i("dim");
    Vec& o = c.out("out", t * d);
    for (int64_t r = 0; r < t; ++r)
      for (int64_t q = 0; q < d; ++q)
        o[r * d + q] = c["table"][static_cast<int64_t>(c["idx"][r]) * d + q];
  };
  // ---- scan, convolution, pooling
  h["L1/prefix_sum"] = [](const Ctx& c) {
    Vec& o = c.out("out", c.i("n"));
    double s = 0;
    for (size_t k = 0; k < o.size(); ++k) o[k] = s += c["x"][k];
  };
  h["L1/conv1d"] = [](const Ctx& c) {
    const int64_t n = c.i("n"), k = c.i("k");
    Vec& o = c.out("out", n - k + 1);
    for (int64_t r = 0; r < n - k + 1; ++r)
      for (int64_t j = 0; j < k; ++j) o[r] += c["x"][r + j] * c["w"][j];
  };
  h["L1/maxpool2d"] = [](const Ctx& c) {
    const int64_t C = c.i("c"), H = c.i("h"), W = c.i("w"), oh = H / 2, ow = W / 2;
    Vec& o = c.out("out", C * oh * ow);
    const Vec& x = c["x"];
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          auto at = [&](int64_t y, int64_t z) { return x[(ch * H + y) * W + z]; };
          o[(ch * oh + r) * ow + q] = std::max({at(2 * r, 2 * q), at(2 * r, 2 * q + 1),
                                                at(2 * r + 1, 2 * q), at(2 * r + 1, 2 * q + 1)});
        }
  };
  h["L1/avgpool1d"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), n = c.i("n"), on = (n - 3) / 2 + 1;
    Vec& o = c.out("out", R * on);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = 0; q < on; ++q) o[r * on + q] = sum_of(&c["x"][r * n + 2 * q], 3) / 3;
  };

  // ---- level 2
  auto linear = [](const char* X, const char* W, const char* b, const char* Y,
                   double (*act)(double)) {
    return [=](const Ctx& c) {
      const int64_t m = c.i("m"), n = c.i("n"), k = c.i("k");
      Vec r = matmul(c[X], c[W], m, n, k);
      for (int64_t i = 0; i < m * n; ++i) r[i] = act(r[i] + c[b][i % n]);
      c.b[Y] = r;
    };
  };
  h["L2/matmul_bias_relu"] =
      linear("A", "W", "bias", "C", [](double v) { return std::max(v, 0.0); });
  h["L2/gelu_linear"] = linear("X", "W", "b", "Y", gelu_tanh);
  h["L2/matmul_f16_bias"] = linear("A", "B", "bias", "C", [](double v) { return v; });
  h["L2/linear_residual"] = [](const Ctx& c) {
    const int64_t m = c.i("m"), d = c.i("d");
    Vec r = matmul(c["X"], c["W"], m, d, d);
    for (int64_t i = 0; i < m * d; ++i) r[i] += c["X"][i] + c["b"][i % d];
    c.b["Y"] = r;
  };
  h["L2/dequant_matvec"] = [](const Ctx& c) {
    const int64_t m = c.i("m"), k = c.i("k");
    Vec& y = c.out("y", m);
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < k; ++j) acc += (c["Wq"][i * k + j] - 128) * c["x"][j];
      y[i] = c["scale"][i] * acc;
    }
  };
  h["L2/residual_rmsnorm"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), d = c.i("d");
    Vec& hh = c.out("h", R * d);
    Vec& y = c.out("y", R * d);
    for (int64_t i = 0; i < R * d; ++i) hh[i] = static_cast<float>(c["x"][i] + c["res"][i]);
    for (int64_t r = 0; r < R; ++r) {
      double s = 1 / std::sqrt(sumsq_of(&hh[r * d], d) / d + 1e-6);
      for (int64_t q = 0; q < d; ++q) y[r * d + q] = hh[r * d + q] * s * c["w"][q];
    }
  };
  h["L2/layernorm_residual"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), d = c.i("d");
    Vec& o = c.out("out", R * d);
    for (int64_t r = 0; r < R; ++r) {
      Vec s(static_cast<size_t>(d));
      for (int64_t q = 0; q < d; ++q) s[q] = c["x"][r * d + q] + c["res"][r * d + q];
      layernorm_row(s.data(), &o[r * d], d, c["gamma"], c["beta"], 1e-5);
    }
  };
  h["L2/scaled_softmax"] =
      per_row("rows", "cols", [](const double* x, double* o, int64_t n, const Ctx& c) {
        softmax_row(x, o, n, c.f("scale"));
      });
  h["L2/softmax_f16"] =
      per_row("rows", "cols",
              [](const double* x, double* o, int64_t n, const Ctx&) { softmax_row(x, o, n, 1.0); });
  h["L2/swiglu_bf16"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), d = c.i("d");
    Vec& o = c.out("out", R * d);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = 0; q < d; ++q) {
        double g = c["x"][r * 2 * d + q], u = c["x"][r * 2 * d + d + q];
        o[r * d + q] = g * sigmoid(g) * u;
      }
  };
  h["L2/bias_gelu_erf"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), C = c.i("cols");
    Vec& o = c.out("out", R * C);
    for (int64_t i = 0; i < R * C; ++i) {
      double v = c["x"][i] + c["b"][i % C];
      o[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
  };
  h["L2/cross_entropy"] = [](const Ctx& c) {
    const int64_t B = c.i("batch"), V = c.i("vocab");
    Vec& o = c.out("loss", B);
    for (int64_t r = 0; r < B; ++r) {
      const double* x = &c["logits"][r * V];
      double m = *std::max_element(x, x + V), s = 0;
      for (int64_t j = 0; j < V; ++j) s += std::exp(x[j] - m);
      o[r] = m + std::log(s) - x[static_cast<int64_t>(c["labels"][r])];
    }
  };
  auto scores = [](const Ctx& c, bool causal) {
    const int64_t T = c.i("T"), d = c.i("d");
    Vec P(static_cast<size_t>(T * T));
    for (int64_t i = 0; i < T; ++i) {
      Vec s(static_cast<size_t>(T), -INFINITY);
      for (int64_t j = 0; j < T; ++j) {
        if (causal && j > i) continue;
        double acc = 0;
        for (int64_t q = 0; q < d; ++q) acc += c["q"][i * d + q] * c["k"][j * d + q];
        s[j] = acc;
      }
      softmax_row(s.data(), &P[i * T], T, c.f("scale"));
    }
    return P;
  };
  h["L2/attention_softmax"] = [=](const Ctx& c) { c.b["P"] = scores(c, false); };
  h["L2/causal_attention"] = [=](const Ctx& c) {
    const int64_t T = c.i("T"), d = c.i("d");
    c.b["o"] = matmul(scores(c, true), c["v"], T, d, T);
  };
  h["L2/rope"] = [](const Ctx& c) {
    const int64_t T = c.i("T"), H = c.i("H"), half = c.i("half");
    Vec& o = c.out("out", T * H * 2 * half);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hh = 0; hh < H; ++hh)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t row = (t * H + hh) * 2 * half;
          double theta = t * std::pow(c.f("base"), -static_cast<double>(i) / half);
          double a = c["x"][row + i], b = c["x"][row + half + i];
          o[row + i] = a * std::cos(theta) - b * std::sin(theta);
          o[row + half + i] = b * std::cos(theta) + a * std::sin(theta);
        }
  };
  h["L2/cosine_similarity"] = [](const Ctx& c) {
    const int64_t R = c.i("rows"), d = c.i("d");
    Vec& o = c.out("out", R);
    for (int64_t r = 0; r < R; ++r) {
      double ab = 0;
      for (int64_t q = 0; q < d; ++q) ab += c["a"][r * d + q] * c["b"][r * d + q];
      o[r] =
          ab / std::max(std::sqrt(sumsq_of(&c["a"][r * d], d) * sumsq_of(&c["b"][r * d], d)), 1e-8);
    }
  };
  h["L2/conv1d_bias_relu"] = [](const Ctx& c) {
    const int64_t ci = c.i("cin"), co = c.i("cout"), n = c.i("n"), k = c.i("k"), on = n - k + 1;
    Vec& o = c.out("out", co * on);
    for (int64_t oc = 0; oc < co; ++oc)
      for (int64_t i = 0; i < on; ++i) {
        double acc = c["bias"][oc];
        for (int64_t ch = 0; ch < ci; ++ch)
          for (int64_t j = 0; j < k; ++j)
            acc += c["w"][(oc * ci + ch) * k + j] * c["x"][ch * n + i + j];
        o[oc * on + i] = std::max(acc, 0.0);
      }
  };
  h["L2/adam_step"] = [](const Ctx& c) {
    Vec &p = c["p"], &m = c["m"], &v = c["v"];
    const Vec& g = c["g"];
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = c.f("beta1") * m[i] + (1 - c.f("beta1")) * g[i];
      v[i] = c.f("beta2") * v[i] + (1 - c.f("beta2")) * g[i] * g[i];
      p[i] -= c.f("lr") * (m[i] / c.f("bc1")) / (std::sqrt(v[i] / c.f("bc2")) + c.f("eps"));
    }
  };
  return h;
}

class ReferenceSemantics : public ::testing::TestWithParam<int> {};

TEST_P(ReferenceSemantics, MatchesHostImplementationOnCpuSizes) {
  const int level = GetParam();
  auto suite =
      load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/level" + std::to_string(level) + ".jsonl");
  ASSERT_TRUE(suite) << suite.status().message();
  const auto host = host_implementations();
  for (const Task& t : suite->tasks) {
    SCOPED_TRACE(t.id);
    auto fn = host.find(t.id);
    ASSERT_NE(fn, host.end()) << "no host implementation for " << t.id;
    check_reference(t, fn->second, 2);
  }
}

// Grid-stride loops with a capped grid, and the scan's carry across 1024-chunk passes, only do
// their second round past a size that cpu_params stay under. These runs cross those sizes, so
// the code paths the GPU sizes take are executed too.
TEST(ReferenceSemanticsLarge, CappedGridsAndMultiPassScans) {
  const std::map<std::string, Params> larger = {
      {"L1/sum", {{"n", int64_t{300007}}}},
      {"L1/dot", {{"n", int64_t{300007}}}},
      {"L1/max_reduce", {{"n", int64_t{70001}}}},
      {"L1/l2_norm", {{"n", int64_t{140001}}}},
      {"L1/histogram", {{"n", int64_t{140001}}}},
      {"L1/prefix_sum", {{"n", int64_t{1100003}}}},
      {"L1/gelu_tanh", {{"n", int64_t{530001}}}},
      {"L1/f32_to_bf16", {{"n", int64_t{270001}}}},
      {"L1/axpy", {{"n", int64_t{1050001}}, {"alpha", 0.75}}},
      {"L2/bias_gelu_erf", {{"rows", int64_t{1031}}, {"cols", int64_t{1021}}}},
  };
  const auto host = host_implementations();
  for (int level : {1, 2}) {
    auto suite = load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/level" + std::to_string(level) +
                            ".jsonl");
    ASSERT_TRUE(suite) << suite.status().message();
    for (const auto& [id, params] : larger) {
      const Task* t = suite->find(id);
      if (t == nullptr) continue;
      SCOPED_TRACE(id + " at larger sizes");
      Task big = *t;
      big.cpu_params = params;
      check_reference(big, host.at(id), 1);
    }
  }
}

// The GPU sizes are too big for the interpreter, but their launch plans must still pass the
// sandbox's limits (grid, block, shared memory, scratch), or the GPU path would reject them.
TEST_P(ReferenceSemantics, LaunchPlansFitTheLimitsAtGpuSizes) {
  const int level = GetParam();
  auto suite =
      load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/level" + std::to_string(level) + ".jsonl");
  ASSERT_TRUE(suite) << suite.status().message();
  for (const Task& t : suite->tasks) {
    auto answer = sandbox::parse_answer(t.reference);
    ASSERT_TRUE(answer) << t.id << ": " << answer.status().message();
    for (const Params* params : {&t.params, &t.cpu_params}) {
      auto plan = sandbox::make_launch_plan(*answer, t, *params, sandbox::PlanLimits{});
      EXPECT_TRUE(plan) << t.id << ": " << plan.status().message();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, ReferenceSemantics, ::testing::Values(1, 2));

}  // namespace
}  // namespace leap::tasks
