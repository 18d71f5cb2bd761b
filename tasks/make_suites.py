#!/usr/bin/env python3
"""Writes tasks/level1.jsonl and tasks/level2.jsonl from the task definitions below.

The JSONL files are what the program reads; this script is where the tasks are edited, because
reference kernels are unreadable once escaped into one JSON line. Invariants it keeps: every
prompt ends with the exact buffer layout and the launch-argument names, generated from the same
buffer list the loader validates; cpu_params are small and not multiples of 32; each reference
is a complete answer (one ```cuda block, device code only, launch and scratch lines).
Run it from anywhere: `python3 tasks/make_suites.py` (standard library only); `--check` only
compares the committed files with what it would write (a test runs that).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

ROLE_WORDS = {"in": "input (read only)", "out": "output (write every element)",
              "inout": "input and output (update in place)"}

# Device helpers shared by several references: warp-shuffle reductions over a block whose size
# is a multiple of 32. `sh` needs 32 floats of shared memory; every thread of the block calls.
BLOCK_REDUCE = r"""
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum over the block, returned to every thread.
__device__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // sh may still be read by a previous call
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < nwarps ? sh[lane] : 0.f;
    t = warp_sum(t);
    if (lane == 0) sh[0] = t;
  }
  __syncthreads();
  return sh[0];
}
// Maximum over the block, returned to every thread.
__device__ float block_max(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < nwarps ? sh[lane] : -__int_as_float(0x7f800000);
    t = warp_max(t);
    if (lane == 0) sh[0] = t;
  }
  __syncthreads();
  return sh[0];
}
""".strip("\n")


def buf(name, dtype, shape, role, init=None):
    b = {"name": name, "dtype": dtype, "shape": shape, "role": role}
    if role != "out":
        b["init"] = init or "normal"
    return b


def describe(params, cpu_params, buffers):
    """The layout paragraph every prompt ends with: buffers, parameters, launch names."""
    lines = ["Buffers (row-major, contiguous, device memory):"]
    for b in buffers:
        shape = "[" + ", ".join(b["shape"]) + "]"
        init = f", initialised {b['init']}" if b["role"] != "out" else ""
        lines.append(f"- {b['name']}: {b['dtype']}{shape}, {ROLE_WORDS[b['role']]}{init}")
    ints = [k for k, v in params.items() if isinstance(v, int)]
    floats = [k for k, v in params.items() if isinstance(v, float)]
    if ints:
        sizes = ", ".join(f"{k} = {params[k]}" for k in ints)
        small = ", ".join(f"{k} = {cpu_params[k]}" for k in ints)
        lines.append(f"Integer parameters: {sizes} (also checked at {small}; do not assume sizes are "
                     f"multiples of the block size).")
    if floats:
        vals = ", ".join(f"{k} (e.g. {params[k]})" for k in floats)
        lines.append(f"Float parameters, whose values differ between checks (take each as a float kernel "
                     f"argument): {vals}.")
    names = [b["name"] for b in buffers] + list(params)
    lines.append("Launch arguments may use the names " + ", ".join(names) + ".")
    return "\n".join(lines)


def task(tid, level, family, text, params, cpu_params, buffers, code, atol, rtol, split="train"):
    assert split in ("train", "heldout")
    return {
        "id": tid, "level": level, "family": family,
        "prompt": text.strip() + "\n\n" + describe(params, cpu_params, buffers),
        "params": params, "cpu_params": cpu_params, "buffers": buffers,
        "reference": "```cuda\n" + code.strip("\n") + "\n```",
        "atol": atol, "rtol": rtol, "split": split,
    }


# ---- level 1: single operations ----------------------------------------------------------------
N = 16777216  # 2^24 elements: 64 MiB of f32
L1 = []


def unary_f32(name, formula_text, expr, launch_style, atol=1e-5, rtol=1e-5, init="normal", split="train",
              cpu_n=4099, family="elementwise"):
    """out[i] = f(x[i]) over n floats; `expr` is C over `v`. Three kernel styles rotate."""
    if launch_style == "plain":
        code = f"""
__global__ void {name}_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    float v = x[i];
    out[i] = {expr};
  }}
}}
// launch: {name}_kernel<<<cdiv(n, 256), 256>>>(x, out, n)"""
    elif launch_style == "gridstride":
        code = f"""
// Grid-stride loop: a bounded grid covers any n.
__global__ void {name}_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
    float v = x[i];
    out[i] = {expr};
  }}
}}
// launch: {name}_kernel<<<min(cdiv(n, 256), 2048), 256>>>(x, out, n)"""
    else:  # template over the block size
        code = f"""
template <int BLOCK>
__global__ void {name}_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {{
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) {{
    float v = x[i];
    out[i] = {expr};
  }}
}}
// launch: {name}_kernel<128><<<cdiv(n, 128), 128>>>(x, out, n)"""
    L1.append(task(f"L1/{name}", 1, family, f"Elementwise: {formula_text} for every i < n (f32).",
                   {"n": N}, {"n": cpu_n},
                   [buf("x", "f32", ["n"], "in", init), buf("out", "f32", ["n"], "out")],
                   code, atol, rtol, split))


unary_f32("relu", "out[i] = max(x[i], 0)", "fmaxf(v, 0.f)", "plain")
unary_f32("gelu_tanh",
          "out[i] = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) with x = x[i] (the tanh "
          "approximation of GELU)",
          "0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))",
          "gridstride", atol=1e-5, rtol=1e-4, cpu_n=5003)
unary_f32("silu", "out[i] = x[i] * sigmoid(x[i]) = x[i] / (1 + exp(-x[i])) (SiLU, also called swish)",
          "v / (1.f + expf(-v))", "template", atol=1e-5, rtol=1e-4, cpu_n=3001)
unary_f32("sigmoid", "out[i] = 1 / (1 + exp(-x[i]))", "1.f / (1.f + expf(-v))", "plain", atol=1e-6, rtol=1e-4,
          init="uniform(-8,8)")
unary_f32("softplus",
          "out[i] = log(1 + exp(x[i])), except that out[i] = x[i] where x[i] > 20 (PyTorch's softplus with "
          "beta 1 and threshold 20, which avoids overflow)",
          "v > 20.f ? v : log1pf(expf(v))", "gridstride", atol=1e-5, rtol=1e-4, init="uniform(-30,30)",
          cpu_n=7919)
unary_f32("exp", "out[i] = exp(x[i])", "expf(v)", "template", atol=1e-6, rtol=1e-5, init="uniform(-10,10)")
unary_f32("tanh", "out[i] = tanh(x[i])", "tanhf(v)", "plain", atol=1e-6, rtol=1e-5, init="uniform(-5,5)",
          split="heldout", cpu_n=4111)
unary_f32("rsqrt", "out[i] = 1 / sqrt(x[i]); inputs are positive", "rsqrtf(v)", "gridstride", atol=1e-6,
          rtol=1e-5, init="uniform(0.01,100)", cpu_n=2053)
unary_f32("abs_log", "out[i] = log(|x[i]| + 1)", "log1pf(fabsf(v))", "template", atol=1e-6, rtol=1e-5,
          init="uniform(-1000,1000)", split="heldout", cpu_n=3989)


def binary_f32(name, formula_text, expr, binit="normal", atol=1e-6, rtol=1e-6, split="train", cpu_n=4099):
    code = f"""
__global__ void {name}_kernel(const float* __restrict__ a, const float* __restrict__ b,
                              float* __restrict__ out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    float x = a[i], y = b[i];
    out[i] = {expr};
  }}
}}
// launch: {name}_kernel<<<cdiv(n, 256), 256>>>(a, b, out, n)"""
    L1.append(task(f"L1/{name}", 1, "elementwise", f"Elementwise: {formula_text} for every i < n (f32).",
                   {"n": N}, {"n": cpu_n},
                   [buf("a", "f32", ["n"], "in"), buf("b", "f32", ["n"], "in", binit),
                    buf("out", "f32", ["n"], "out")], code, atol, rtol, split))


binary_f32("add", "out[i] = a[i] + b[i]", "x + y")
binary_f32("mul", "out[i] = a[i] * b[i]", "x * y", cpu_n=5009)
binary_f32("div", "out[i] = a[i] / b[i]; b is in [0.5, 2]", "x / y", binit="uniform(0.5,2)", rtol=1e-6,
           cpu_n=3011)
binary_f32("maximum", "out[i] = max(a[i], b[i])", "fmaxf(x, y)", split="heldout", cpu_n=4127)
binary_f32("relu_mul", "out[i] = max(a[i], 0) * b[i]", "fmaxf(x, 0.f) * y", cpu_n=6007)

L1.append(task(
    "L1/axpy", 1, "elementwise",
    "AXPY in place: y[i] = alpha * x[i] + y[i] for every i < n (f32), with the float parameter alpha.",
    {"n": N, "alpha": 0.75}, {"n": 4099, "alpha": -1.25},
    [buf("x", "f32", ["n"], "in"), buf("y", "f32", ["n"], "inout")],
    """
__global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float alpha, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = fmaf(alpha, x[i], y[i]);
}
// launch: axpy<<<min(cdiv(n, 256), 4096), 256>>>(x, y, alpha, n)""", 1e-5, 1e-5))

L1.append(task(
    "L1/scale_shift", 1, "elementwise",
    "Affine map: out[i] = alpha * x[i] + beta for every i < n (f32), with float parameters alpha and beta.",
    {"n": N, "alpha": 2.5, "beta": -0.5}, {"n": 3001, "alpha": -0.3, "beta": 1.5},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["n"], "out")],
    """
__global__ void scale_shift(const float* __restrict__ x, float* __restrict__ out, float alpha, float beta,
                            int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + beta;
}
// launch: scale_shift<<<cdiv(n, 512), 512>>>(x, out, alpha, beta, n)""", 1e-5, 1e-5))

L1.append(task(
    "L1/leaky_relu", 1, "activation",
    "Leaky ReLU: out[i] = x[i] if x[i] >= 0, else slope * x[i], for every i < n (f32); slope is a float "
    "parameter.",
    {"n": N, "slope": 0.01}, {"n": 4133, "slope": 0.2},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["n"], "out")],
    """
__global__ void leaky_relu(const float* __restrict__ x, float* __restrict__ out, float slope, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    out[i] = v >= 0.f ? v : slope * v;
  }
}
// launch: leaky_relu<<<cdiv(n, 256), 256>>>(x, out, slope, n)""", 1e-6, 1e-6, "heldout"))

L1.append(task(
    "L1/clamp", 1, "elementwise",
    "Clamp: out[i] = min(max(x[i], lo), hi) for every i < n (f32); lo <= hi are float parameters.",
    {"n": N, "lo": -0.5, "hi": 1.0}, {"n": 5003, "lo": -1.0, "hi": 0.25},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["n"], "out")],
    """
__global__ void clamp_kernel(const float* __restrict__ x, float* __restrict__ out, float lo, float hi, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fminf(fmaxf(x[i], lo), hi);
}
// launch: clamp_kernel<<<cdiv(n, 256), 256>>>(x, out, lo, hi, n)""", 0.0, 0.0))

L1.append(task(
    "L1/where", 1, "elementwise",
    "Select: out[i] = a[i] if mask[i] != 0, else b[i], for every i < n. mask is u8 (0 or 1); a, b and out "
    "are f32.",
    {"n": N}, {"n": 4099},
    [buf("mask", "u8", ["n"], "in", "randint(0,1)"), buf("a", "f32", ["n"], "in"), buf("b", "f32", ["n"], "in"),
     buf("out", "f32", ["n"], "out")],
    """
__global__ void where_kernel(const unsigned char* __restrict__ mask, const float* __restrict__ a,
                             const float* __restrict__ b, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mask[i] ? a[i] : b[i];
}
// launch: where_kernel<<<cdiv(n, 256), 256>>>(mask, a, b, out, n)""", 0.0, 0.0))

L1.append(task(
    "L1/scale_vec4", 1, "elementwise",
    "Scale with vector loads: out[i] = alpha * x[i] for every i < 4*n4 (f32). The buffers hold exactly 4*n4 "
    "floats and are 16-byte aligned, so float4 accesses are allowed.",
    {"n4": 4194304, "alpha": 1.5}, {"n4": 1027, "alpha": -2.0},
    [buf("x", "f32", ["4*n4"], "in"), buf("out", "f32", ["4*n4"], "out")],
    """
__global__ void scale_vec4(const float* __restrict__ x, float* __restrict__ out, float alpha, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x *= alpha; v.y *= alpha; v.z *= alpha; v.w *= alpha;
    reinterpret_cast<float4*>(out)[i] = v;
  }
}
// launch: scale_vec4<<<cdiv(n4, 256), 256>>>(x, out, alpha, n4)""", 1e-6, 1e-6))

# ---- dtype conversions and half precision ------------------------------------------------------

def convert(name, src, dst, text, code, atol, rtol, split="train", cpu_n=4099):
    L1.append(task(f"L1/{name}", 1, "conversion", text, {"n": N}, {"n": cpu_n},
                   [buf("x", src, ["n"], "in"), buf("out", dst, ["n"], "out")], code, atol, rtol, split))


convert("f32_to_f16", "f32", "f16",
        "Convert to half precision: out[i] = (f16) x[i] for every i < n, rounding to nearest, ties to even "
        "(__float2half_rn).",
        """
#include <cuda_fp16.h>
__global__ void f32_to_f16(const float* __restrict__ x, __half* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(x[i]);
}
// launch: f32_to_f16<<<cdiv(n, 256), 256>>>(x, out, n)""", 0.0, 0.0)
convert("f16_to_f32", "f16", "f32", "Widen half precision to float: out[i] = (f32) x[i] for every i < n.",
        """
#include <cuda_fp16.h>
// Two halves per thread through __half2; the last thread takes the odd tail element.
__global__ void f16_to_f32(const __half* __restrict__ x, float* __restrict__ out, int n) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  int pairs = n / 2;
  if (p < pairs) {
    float2 f = __half22float2(reinterpret_cast<const __half2*>(x)[p]);
    out[2 * p] = f.x;
    out[2 * p + 1] = f.y;
  } else if (p == pairs && (n & 1)) {
    out[n - 1] = __half2float(x[n - 1]);
  }
}
// launch: f16_to_f32<<<cdiv(n / 2 + 1, 256), 256>>>(x, out, n)""", 0.0, 0.0, cpu_n=5001)
convert("f32_to_bf16", "f32", "bf16",
        "Convert to bfloat16: out[i] = (bf16) x[i] for every i < n, rounding to nearest, ties to even "
        "(__float2bfloat16_rn).",
        """
#include <cuda_bf16.h>
__global__ void f32_to_bf16(const float* __restrict__ x, __nv_bfloat16* __restrict__ out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = __float2bfloat16_rn(x[i]);
}
// launch: f32_to_bf16<<<min(cdiv(n, 256), 1024), 256>>>(x, out, n)""", 0.0, 0.0, cpu_n=3001)
convert("bf16_to_f32", "bf16", "f32", "Widen bfloat16 to float: out[i] = (f32) x[i] for every i < n.",
        """
#include <cuda_bf16.h>
__global__ void bf16_to_f32(const __nv_bfloat16* __restrict__ x, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(x[i]);
}
// launch: bf16_to_f32<<<cdiv(n, 128), 128>>>(x, out, n)""", 0.0, 0.0, "heldout", cpu_n=4129)

L1.append(task(
    "L1/add_f16", 1, "elementwise",
    "Half-precision add: out[i] = a[i] + b[i] for every i < n, all three buffers f16 (the sum rounded to "
    "nearest f16, as __hadd does).",
    {"n": N}, {"n": 4099},
    [buf("a", "f16", ["n"], "in"), buf("b", "f16", ["n"], "in"), buf("out", "f16", ["n"], "out")],
    """
#include <cuda_fp16.h>
// __half2 arithmetic on pairs; the thread just past the pairs takes an odd tail element.
__global__ void add_f16(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out,
                        int n) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  int pairs = n / 2;
  if (p < pairs) {
    reinterpret_cast<__half2*>(out)[p] =
        __hadd2(reinterpret_cast<const __half2*>(a)[p], reinterpret_cast<const __half2*>(b)[p]);
  } else if (p == pairs && (n & 1)) {
    out[n - 1] = __hadd(a[n - 1], b[n - 1]);
  }
}
// launch: add_f16<<<cdiv(n / 2 + 1, 256), 256>>>(a, b, out, n)""", 1e-3, 1e-3))

L1.append(task(
    "L1/gelu_bf16", 1, "activation",
    "GELU (tanh approximation) on bfloat16: with v = (float) x[i], out[i] = (bf16) (0.5 * v * (1 + tanh("
    "sqrt(2/pi) * (v + 0.044715 * v^3)))) for every i < n; compute in f32 and round the result to nearest "
    "bf16.",
    {"n": N}, {"n": 3001},
    [buf("x", "bf16", ["n"], "in"), buf("out", "bf16", ["n"], "out")],
    """
#include <cuda_bf16.h>
__global__ void gelu_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __bfloat162float(x[i]);
    float g = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    out[i] = __float2bfloat16_rn(g);
  }
}
// launch: gelu_bf16<<<cdiv(n, 256), 256>>>(x, out, n)""", 1e-2, 1e-2))

# ---- reductions ----------------------------------------------------------------------------------
R, C = 4096, 4096  # rows, cols of the row-wise tasks on a GPU
RC, CC = 37, 523   # and on the interpreter

L1.append(task(
    "L1/sum", 1, "reduction",
    "Full reduction: out[0] = sum of x[i] over every i < n (f32). out has one element.",
    {"n": N}, {"n": 10007},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["1"], "out")],
    BLOCK_REDUCE + """
__global__ void zero_scalar(float* out) { out[0] = 0.f; }
// Each block reduces a grid-stride share, then adds it to out with one atomic.
__global__ void sum_atomic(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float sh[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  v = block_sum(v, sh);
  if (threadIdx.x == 0) atomicAdd(out, v);
}
// launch: zero_scalar<<<1, 1>>>(out)
// launch: sum_atomic<<<min(cdiv(n, 256), 1024), 256>>>(x, out, n)""", 0.1, 1e-3))

L1.append(task(
    "L1/max_reduce", 1, "reduction",
    "Full reduction: out[0] = the maximum of x[i] over every i < n (f32). out has one element.",
    {"n": N}, {"n": 9001},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["1"], "out")],
    BLOCK_REDUCE + """
// Pass 1: each block writes the maximum of its grid-stride share; pass 2: one block reduces those.
__global__ void max_partial(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float sh[32];
  float v = -__int_as_float(0x7f800000);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v = fmaxf(v, x[i]);
  v = block_max(v, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}
__global__ void max_final(const float* __restrict__ partial, float* __restrict__ out, int count) {
  __shared__ float sh[32];
  float v = -__int_as_float(0x7f800000);
  for (int i = threadIdx.x; i < count; i += blockDim.x) v = fmaxf(v, partial[i]);
  v = block_max(v, sh);
  if (threadIdx.x == 0) out[0] = v;
}
// scratch: partial f32[256]
// launch: max_partial<<<min(cdiv(n, 256), 256), 256>>>(x, partial, n)
// launch: max_final<<<1, 256>>>(partial, out, min(cdiv(n, 256), 256))""", 0.0, 0.0))

L1.append(task(
    "L1/l2_norm", 1, "reduction",
    "Euclidean norm: out[0] = sqrt(sum over i < n of x[i]^2) (f32). out has one element.",
    {"n": N}, {"n": 8191},
    [buf("x", "f32", ["n"], "in"), buf("out", "f32", ["1"], "out")],
    BLOCK_REDUCE + """
__global__ void sumsq_partial(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float sh[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i] * x[i];
  v = block_sum(v, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}
__global__ void sqrt_of_sum(const float* __restrict__ partial, float* __restrict__ out, int count) {
  __shared__ float sh[32];
  float v = 0.f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) v += partial[i];
  v = block_sum(v, sh);
  if (threadIdx.x == 0) out[0] = sqrtf(v);
}
// scratch: partial f32[512]
// launch: sumsq_partial<<<min(cdiv(n, 256), 512), 256>>>(x, partial, n)
// launch: sqrt_of_sum<<<1, 512>>>(partial, out, min(cdiv(n, 256), 512))""", 1e-3, 1e-4))

L1.append(task(
    "L1/dot", 1, "reduction",
    "Dot product: out[0] = sum over i < n of a[i] * b[i] (f32). out has one element.",
    {"n": N}, {"n": 6007},
    [buf("a", "f32", ["n"], "in"), buf("b", "f32", ["n"], "in"), buf("out", "f32", ["1"], "out")],
    """
__global__ void zero_scalar(float* out) { out[0] = 0.f; }
// Shared-memory tree reduction per block (no shuffles), then one atomic per block.
__global__ void dot_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           int n) {
  __shared__ float partial[256];
  float v = 0.f;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += a[i] * b[i];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
// launch: zero_scalar<<<1, 1>>>(out)
// launch: dot_kernel<<<min(cdiv(n, 256), 1024), 256>>>(a, b, out, n)""", 0.1, 1e-3))


def rowwise(name, text, code, out_dtype="f32", atol=1e-4, rtol=1e-4, split="train", init="normal",
            family="reduction", cpu=(RC, CC)):
    L1.append(task(f"L1/{name}", 1, family, text, {"rows": R, "cols": C}, {"rows": cpu[0], "cols": cpu[1]},
                   [buf("x", "f32", ["rows", "cols"], "in", init), buf("out", out_dtype, ["rows"], "out")],
                   code, atol, rtol, split))


rowwise("row_sum", "Row sums: out[r] = sum over c < cols of x[r][c], for every row r < rows (f32).", """
// One warp per row, four rows per block of 128 threads.
__global__ void row_sum(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  int row = blockIdx.x * 4 + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps leave together, so the shuffles below stay full-warp
  const float* xr = x + (size_t)row * cols;
  float v = 0.f;
  for (int c = lane; c < cols; c += 32) v += xr[c];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (lane == 0) out[row] = v;
}
// launch: row_sum<<<cdiv(rows, 4), 128>>>(x, out, rows, cols)""", atol=1e-3)
rowwise("row_max", "Row maxima: out[r] = max over c < cols of x[r][c], for every row r < rows (f32).",
        BLOCK_REDUCE + """
__global__ void row_max(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float v = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) v = fmaxf(v, xr[c]);
  v = block_max(v, sh);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
// launch: row_max<<<rows, 256>>>(x, out, cols)""", atol=0.0, rtol=0.0, split="heldout", cpu=(37, 517))
rowwise("row_mean", "Row means: out[r] = (1/cols) * sum over c < cols of x[r][c], for every row r < rows (f32).",
        BLOCK_REDUCE + """
__global__ void row_mean(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) v += xr[c];
  v = block_sum(v, sh);
  if (threadIdx.x == 0) out[blockIdx.x] = v / cols;
}
// launch: row_mean<<<rows, 256>>>(x, out, cols)""", atol=1e-5, cpu=(29, 611))
rowwise("row_l2norm", "Row norms: out[r] = sqrt(sum over c < cols of x[r][c]^2), for every row r < rows (f32).",
        BLOCK_REDUCE + """
template <int BLOCK>
__global__ void row_l2norm(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) v += xr[c] * xr[c];
  v = block_sum(v, sh);
  if (threadIdx.x == 0) out[blockIdx.x] = sqrtf(v);
}
// launch: row_l2norm<128><<<rows, 128>>>(x, out, cols)""", split="heldout", cpu=(33, 499))

L1.append(task(
    "L1/argmax_rows", 1, "reduction",
    "Row argmax: out[r] = the column index c < cols of the largest x[r][c] (the smallest such index on a tie), "
    "for every row r < rows. x is f32; out is i64.",
    {"rows": R, "cols": C}, {"rows": 31, "cols": 557},
    [buf("x", "f32", ["rows", "cols"], "in"), buf("out", "i64", ["rows"], "out")],
    """
// (value, index) pairs reduced with shuffles: larger value wins, a tie goes to the smaller index.
__device__ __forceinline__ void better(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) { v = v2; i = i2; }
}
__global__ void argmax_rows(const float* __restrict__ x, long long* __restrict__ out, int cols) {
  __shared__ float sv[32];
  __shared__ int si[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float v = -__int_as_float(0x7f800000);
  int idx = 0x7fffffff;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) better(v, idx, xr[c], c);
  for (int o = 16; o > 0; o >>= 1)
    better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { sv[warp] = v; si[warp] = idx; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) better(v, idx, sv[w], si[w]);
    out[blockIdx.x] = idx;
  }
}
// launch: argmax_rows<<<rows, 256>>>(x, out, cols)""", 0.0, 0.0))

L1.append(task(
    "L1/histogram", 1, "reduction",
    "Histogram of bytes: out[v] = the number of i < n with x[i] == v, for every v < 256. x is u8; out is "
    "i32[256].",
    {"n": N}, {"n": 12289},
    [buf("x", "u8", ["n"], "in", "randint(0,255)"), buf("out", "i32", ["256"], "out")],
    """
__global__ void zero_bins(int* out) { out[threadIdx.x] = 0; }
// Per-block histogram in shared memory, merged into the global one with atomics.
__global__ void histogram(const unsigned char* __restrict__ x, int* __restrict__ out, int n) {
  __shared__ int bins[256];
  bins[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[x[i]], 1);
  __syncthreads();
  if (bins[threadIdx.x]) atomicAdd(&out[threadIdx.x], bins[threadIdx.x]);
}
// launch: zero_bins<<<1, 256>>>(out)
// launch: histogram<<<min(cdiv(n, 256), 512), 256>>>(x, out, n)""", 0.0, 0.0))

# ---- softmax and normalisation -----------------------------------------------------------------

def rowwise_full(name, family, text, code, extra_bufs=(), params=None, cpu_params=None, atol=1e-5, rtol=1e-4,
                 split="train", dtype="f32"):
    params = dict(params or {"rows": R, "cols": C})
    cpu_params = dict(cpu_params or {"rows": RC, "cols": CC})
    bufs = [buf("x", dtype, ["rows", "cols"], "in")] + list(extra_bufs) + [buf("out", dtype, ["rows", "cols"], "out")]
    L1.append(task(f"L1/{name}", 1, family, text, params, cpu_params, bufs, code, atol, rtol, split))


rowwise_full("softmax", "softmax",
             "Row-wise softmax: out[r][c] = exp(x[r][c] - m_r) / sum over j < cols of exp(x[r][j] - m_r), where "
             "m_r is the maximum of row r (subtract it for stability), for every r < rows and c < cols (f32).",
             BLOCK_REDUCE + """
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* orow = out + (size_t)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = block_max(m, sh);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  s = block_sum(s, sh);
  float inv = 1.f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = expf(xr[c] - m) * inv;
}
// launch: softmax_rows<<<rows, 256>>>(x, out, cols)""", atol=1e-7, rtol=1e-4)

rowwise_full("log_softmax", "softmax",
             "Row-wise log-softmax: out[r][c] = x[r][c] - m_r - log(sum over j < cols of exp(x[r][j] - m_r)), where "
             "m_r is the maximum of row r, for every r < rows and c < cols (f32).",
             BLOCK_REDUCE + """
__global__ void log_softmax_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* orow = out + (size_t)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = block_max(m, sh);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  s = block_sum(s, sh);
  float lse = m + logf(s);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = xr[c] - lse;
}
// launch: log_softmax_rows<<<rows, 512>>>(x, out, cols)""", atol=1e-5, rtol=1e-5, split="heldout",
             cpu_params={"rows": 23, "cols": 701})

rowwise_full("layernorm", "normalization",
             "LayerNorm over the last dimension: for each row r, mean_r = (1/cols) sum_c x[r][c], var_r = (1/cols) "
             "sum_c (x[r][c] - mean_r)^2 (biased), and out[r][c] = (x[r][c] - mean_r) / sqrt(var_r + 1e-5) * "
             "gamma[c] + beta[c], for every r < rows and c < cols (f32).",
             BLOCK_REDUCE + """
__global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, float* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* orow = out + (size_t)blockIdx.x * cols;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const float mean = block_sum(s, sh) / cols;
  float q = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = xr[c] - mean;
    q += d * d;
  }
  const float rstd = rsqrtf(block_sum(q, sh) / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
// launch: layernorm<<<rows, 256>>>(x, gamma, beta, out, cols)""",
             extra_bufs=[buf("gamma", "f32", ["cols"], "in", "uniform(0.5,1.5)"), buf("beta", "f32", ["cols"], "in")],
             atol=1e-4, rtol=1e-4)

rowwise_full("rmsnorm", "normalization",
             "RMSNorm over the last dimension: out[r][c] = x[r][c] / sqrt((1/cols) * sum_j x[r][j]^2 + 1e-6) * w[c], "
             "for every r < rows and c < cols (f32).",
             BLOCK_REDUCE + """
__global__ void rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                        int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* orow = out + (size_t)blockIdx.x * cols;
  float q = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) q += xr[c] * xr[c];
  const float r = rsqrtf(block_sum(q, sh) / cols + 1e-6f);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = xr[c] * r * w[c];
}
// launch: rmsnorm<<<rows, 256>>>(x, w, out, cols)""",
             extra_bufs=[buf("w", "f32", ["cols"], "in", "uniform(0.5,1.5)")], atol=1e-4, rtol=1e-4,
             cpu_params={"rows": 19, "cols": 777})

# ---- matrices ------------------------------------------------------------------------------------

L1.append(task(
    "L1/transpose", 1, "matrix",
    "Transpose: out[c][r] = x[r][c] for every r < rows and c < cols. x is [rows, cols] and out is [cols, rows], "
    "both f32.",
    {"rows": 4096, "cols": 3072}, {"rows": 45, "cols": 71},
    [buf("x", "f32", ["rows", "cols"], "in"), buf("out", "f32", ["cols", "rows"], "out")],
    """
// 32x32 tiles staged through shared memory so that both the reads and the writes are coalesced;
// the +1 column avoids shared-memory bank conflicts. Each 32x8 block moves one tile.
__global__ void transpose(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[32][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  for (int j = threadIdx.y; j < 32; j += 8) {
    int r = blockIdx.y * 32 + j;
    if (r < rows && c < cols) tile[j][threadIdx.x] = x[(size_t)r * cols + c];
  }
  __syncthreads();
  int r = blockIdx.y * 32 + threadIdx.x;
  for (int j = threadIdx.y; j < 32; j += 8) {
    int oc = blockIdx.x * 32 + j;
    if (oc < cols && r < rows) out[(size_t)oc * rows + r] = tile[threadIdx.x][j];
  }
}
// launch: transpose<<<(cdiv(cols, 32), cdiv(rows, 32)), (32, 8)>>>(x, out, rows, cols)""", 0.0, 0.0))

L1.append(task(
    "L1/matvec", 1, "matrix",
    "Matrix-vector product: y[i] = sum over j < k of A[i][j] * x[j], for every i < m. A is [m, k], x is [k], "
    "y is [m], all f32.",
    {"m": 4096, "k": 4096}, {"m": 67, "k": 301},
    [buf("A", "f32", ["m", "k"], "in"), buf("x", "f32", ["k"], "in"), buf("y", "f32", ["m"], "out")],
    """
// One warp per row: lanes stride along the row, then a shuffle reduction.
__global__ void matvec(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m,
                       int k) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= m) return;
  const float* a = A + (size_t)row * k;
  float s = 0.f;
  for (int j = lane; j < k; j += 32) s += a[j] * x[j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s;
}
// launch: matvec<<<cdiv(m, 8), 256>>>(A, x, y, m, k)""", 1e-3, 1e-4))

def tiled_matmul(name, extra_params, epilogue):
    """C = A B (f32, 16x16 shared-memory tiles) with `epilogue` (C over acc, row, col) applied."""
    return f"""
// C = A B with 16x16 tiles of A and B staged in shared memory; out-of-range tile entries are 0,
// so any m, n, k work.
#define TILE 16
__global__ void {name}(const float* __restrict__ A, const float* __restrict__ B{extra_params},
                       float* __restrict__ C, int m, int n, int k) {{
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < k; t += TILE) {{
    As[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? A[(size_t)row * k + t + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? B[(size_t)(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];
    __syncthreads();
  }}
  if (row < m && col < n) C[(size_t)row * n + col] = {epilogue};
}}""".strip("\n")


L1.append(task(
    "L1/matmul", 1, "matrix",
    "Matrix multiply: C[i][j] = sum over p < k of A[i][p] * B[p][j], for every i < m and j < n. A is [m, k], "
    "B is [k, n], C is [m, n], all f32 (accumulate in f32; no TF32).",
    {"m": 1024, "n": 1024, "k": 1024}, {"m": 37, "n": 41, "k": 29},
    [buf("A", "f32", ["m", "k"], "in"), buf("B", "f32", ["k", "n"], "in"), buf("C", "f32", ["m", "n"], "out")],
    tiled_matmul("matmul_tiled", "", "acc") + """
// launch: matmul_tiled<<<(cdiv(n, 16), cdiv(m, 16)), (16, 16)>>>(A, B, C, m, n, k)""", 2e-3, 2e-3))

L1.append(task(
    "L1/outer", 1, "matrix",
    "Outer product: out[i][j] = a[i] * b[j], for every i < m and j < n. a is [m], b is [n], out is [m, n], "
    "all f32.",
    {"m": 4096, "n": 4096}, {"m": 53, "n": 97},
    [buf("a", "f32", ["m"], "in"), buf("b", "f32", ["n"], "in"), buf("out", "f32", ["m", "n"], "out")],
    """
__global__ void outer(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int m,
                      int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y;
  if (i < m && j < n) out[(size_t)i * n + j] = a[i] * b[j];
}
// launch: outer<<<(cdiv(n, 128), m), 128>>>(a, b, out, m, n)""", 0.0, 0.0, "heldout"))

L1.append(task(
    "L1/batched_matmul", 1, "matrix",
    "Batched matrix multiply: C[b][i][j] = sum over p < k of A[b][i][p] * B[b][p][j], for every b < batch, "
    "i < m, j < n. A is [batch, m, k], B is [batch, k, n], C is [batch, m, n], all f32.",
    {"batch": 16, "m": 256, "n": 256, "k": 128}, {"batch": 3, "m": 19, "n": 23, "k": 17},
    [buf("A", "f32", ["batch", "m", "k"], "in"), buf("B", "f32", ["batch", "k", "n"], "in"),
     buf("C", "f32", ["batch", "m", "n"], "out")],
    """
// One thread per output element; the batch is the grid's z dimension.
__global__ void bmm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m,
                    int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  const float* a = A + (size_t)blockIdx.z * m * k + (size_t)i * k;
  const float* b = B + (size_t)blockIdx.z * k * n + j;
  float acc = 0.f;
  for (int p = 0; p < k; ++p) acc += a[p] * b[(size_t)p * n];
  C[(size_t)blockIdx.z * m * n + (size_t)i * n + j] = acc;
}
// launch: bmm<<<(cdiv(n, 32), cdiv(m, 8), batch), (32, 8)>>>(A, B, C, m, n, k)""", 1e-3, 1e-3))

L1.append(task(
    "L1/embedding_gather", 1, "indexing",
    "Embedding lookup: out[t][c] = table[idx[t]][c], for every t < tokens and c < dim. table is f32 "
    "[vocab, dim], idx is i32 [tokens] with values in [0, 999] (vocab >= 1000), out is f32 [tokens, dim].",
    {"vocab": 32000, "dim": 512, "tokens": 8192}, {"vocab": 1000, "dim": 19, "tokens": 131},
    [buf("table", "f32", ["vocab", "dim"], "in"), buf("idx", "i32", ["tokens"], "in", "randint(0,999)"),
     buf("out", "f32", ["tokens", "dim"], "out")],
    """
// One block per token; threads copy the row.
__global__ void gather_rows(const float* __restrict__ table, const int* __restrict__ idx, float* __restrict__ out,
                            int dim) {
  const float* src = table + (size_t)idx[blockIdx.x] * dim;
  float* dst = out + (size_t)blockIdx.x * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = src[c];
}
// launch: gather_rows<<<tokens, 256>>>(table, idx, out, dim)""", 0.0, 0.0))

# ---- scan, convolution, pooling ----------------------------------------------------------------

L1.append(task(
    "L1/prefix_sum", 1, "scan",
    "Inclusive prefix sum: out[i] = x[0] + x[1] + ... + x[i], for every i < n. x and out are i32 (the sums "
    "fit: inputs are in [0, 9]). The result must be exact.",
    {"n": 4194304}, {"n": 5003},
    [buf("x", "i32", ["n"], "in", "randint(0,9)"), buf("out", "i32", ["n"], "out")],
    """
// Three launches: (1) each block of 512 scans its chunk (warp shuffles, then the warp totals) and
// records the chunk total; (2) one block scans the chunk totals in place, 1024 at a time with a
// running carry; (3) every chunk after the first adds the total of the chunks before it.
__device__ int block_inclusive_scan(int v, int* warp_totals) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    int t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += t;
  }
  if (lane == 31) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int t = lane < nwarps ? warp_totals[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      int u = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t += u;
    }
    if (lane < nwarps) warp_totals[lane] = t;  // inclusive scan of the warp totals
  }
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  return v;
}
__global__ void scan_chunks(const int* __restrict__ x, int* __restrict__ out, int* __restrict__ chunk_totals,
                            int n) {
  __shared__ int warp_totals[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = block_inclusive_scan(i < n ? x[i] : 0, warp_totals);
  if (i < n) out[i] = v;
  if (threadIdx.x == blockDim.x - 1) chunk_totals[blockIdx.x] = v;
}
__global__ void scan_totals(int* __restrict__ totals, int count) {
  __shared__ int warp_totals[32];
  __shared__ int carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < count; base += blockDim.x) {
    int i = base + threadIdx.x;
    int v = block_inclusive_scan(i < count ? totals[i] : 0, warp_totals) + carry;
    if (i < count) totals[i] = v;
    __syncthreads();  // everyone has read carry
    if (threadIdx.x == blockDim.x - 1) carry = v;
    __syncthreads();
  }
}
__global__ void add_chunk_offsets(int* __restrict__ out, const int* __restrict__ totals, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += totals[blockIdx.x - 1];
}
// scratch: totals i32[cdiv(n, 512)]
// launch: scan_chunks<<<cdiv(n, 512), 512>>>(x, out, totals, n)
// launch: scan_totals<<<1, 1024>>>(totals, cdiv(n, 512))
// launch: add_chunk_offsets<<<cdiv(n, 512), 512>>>(out, totals, n)""", 0.0, 0.0))

L1.append(task(
    "L1/conv1d", 1, "convolution",
    "1-D convolution without padding (cross-correlation, as deep-learning frameworks define it): "
    "out[i] = sum over j < k of x[i + j] * w[j], for every i < n - k + 1. x is [n], w is [k], out is "
    "[n - k + 1], all f32.",
    {"n": N, "k": 31}, {"n": 4099, "k": 7},
    [buf("x", "f32", ["n"], "in"), buf("w", "f32", ["k"], "in"), buf("out", "f32", ["n - k + 1"], "out")],
    """
// Each block stages the 256 + k - 1 inputs its 256 outputs need in dynamic shared memory.
__global__ void conv1d(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int n,
                       int k) {
  extern __shared__ float xs[];
  const int base = blockIdx.x * blockDim.x;
  for (int j = threadIdx.x; j < (int)blockDim.x + k - 1; j += blockDim.x)
    xs[j] = base + j < n ? x[base + j] : 0.f;
  __syncthreads();
  const int i = base + threadIdx.x;
  if (i < n - k + 1) {
    float acc = 0.f;
    for (int j = 0; j < k; ++j) acc += xs[threadIdx.x + j] * w[j];
    out[i] = acc;
  }
}
// launch: conv1d<<<cdiv(n - k + 1, 256), 256, (256 + k - 1) * 4>>>(x, w, out, n, k)""", 1e-4, 1e-4))

L1.append(task(
    "L1/maxpool2d", 1, "pooling",
    "2-D max pooling, window 2x2, stride 2, no padding, per channel: out[ch][i][j] = max of x[ch][2i][2j], "
    "x[ch][2i][2j+1], x[ch][2i+1][2j], x[ch][2i+1][2j+1], for every ch < c, i < h/2, j < w/2 (integer division: "
    "an odd last row or column is dropped). x is [c, h, w] and out is [c, h/2, w/2], both f32.",
    {"c": 64, "h": 512, "w": 512}, {"c": 3, "h": 37, "w": 41},
    [buf("x", "f32", ["c", "h", "w"], "in"), buf("out", "f32", ["c", "h / 2", "w / 2"], "out")],
    """
__global__ void maxpool2x2(const float* __restrict__ x, float* __restrict__ out, int h, int w) {
  const int oh = h / 2, ow = w / 2;
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  const int ch = blockIdx.z;
  if (i >= oh || j >= ow) return;
  const float* p = x + ((size_t)ch * h + 2 * i) * w + 2 * j;
  out[((size_t)ch * oh + i) * ow + j] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[w], p[w + 1]));
}
// launch: maxpool2x2<<<(cdiv(w / 2, 16), cdiv(h / 2, 16), c), (16, 16)>>>(x, out, h, w)""", 0.0, 0.0))

L1.append(task(
    "L1/avgpool1d", 1, "pooling",
    "1-D average pooling per row, window 3, stride 2, no padding: out[r][i] = (x[r][2i] + x[r][2i+1] + "
    "x[r][2i+2]) / 3, for every r < rows and i < (n - 3) / 2 + 1 (integer division). x is [rows, n] and out is "
    "[rows, (n - 3) / 2 + 1], both f32.",
    {"rows": 1024, "n": 8191}, {"rows": 7, "n": 1001},
    [buf("x", "f32", ["rows", "n"], "in"), buf("out", "f32", ["rows", "(n - 3) / 2 + 1"], "out")],
    """
__global__ void avgpool1d(const float* __restrict__ x, float* __restrict__ out, int n) {
  const int on = (n - 3) / 2 + 1;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= on) return;
  const float* p = x + (size_t)blockIdx.y * n + 2 * i;
  out[(size_t)blockIdx.y * on + i] = (p[0] + p[1] + p[2]) * (1.f / 3.f);
}
// launch: avgpool1d<<<(cdiv((n - 3) / 2 + 1, 128), rows), 128>>>(x, out, n)""", 1e-6, 1e-5, "heldout"))

# ---- level 2: fused operations -------------------------------------------------------------------
L2 = []
GELU_TANH = "0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))"

L2.append(task(
    "L2/matmul_bias_relu", 2, "fused_matmul",
    "Linear layer with ReLU: C[i][j] = max(0, sum over p < k of A[i][p] * W[p][j] + bias[j]), for every i < m and "
    "j < n. A is [m, k], W is [k, n], bias is [n], C is [m, n], all f32 (accumulate in f32).",
    {"m": 1024, "n": 1024, "k": 768}, {"m": 37, "n": 43, "k": 31},
    [buf("A", "f32", ["m", "k"], "in"), buf("W", "f32", ["k", "n"], "in"), buf("bias", "f32", ["n"], "in"),
     buf("C", "f32", ["m", "n"], "out")],
    tiled_matmul("linear_relu", ", const float* __restrict__ bias", "fmaxf(acc + bias[col], 0.f)") + """
// launch: linear_relu<<<(cdiv(n, 16), cdiv(m, 16)), (16, 16)>>>(A, W, bias, C, m, n, k)""", 2e-3, 2e-3))

L2.append(task(
    "L2/gelu_linear", 2, "fused_matmul",
    "Linear layer with GELU: with v = sum over p < k of X[i][p] * W[p][j] + b[j], Y[i][j] = 0.5 * v * (1 + tanh("
    "sqrt(2/pi) * (v + 0.044715 * v^3))), for every i < m and j < n. X is [m, k], W is [k, n], b is [n], Y is "
    "[m, n], all f32 (accumulate in f32).",
    {"m": 2048, "n": 1024, "k": 512}, {"m": 35, "n": 39, "k": 45},
    [buf("X", "f32", ["m", "k"], "in"), buf("W", "f32", ["k", "n"], "in"), buf("b", "f32", ["n"], "in"),
     buf("Y", "f32", ["m", "n"], "out")],
    """
// 32x32 output tile per block of 32x8 threads; each thread accumulates four rows of its column.
__global__ void linear_gelu(const float* __restrict__ X, const float* __restrict__ W, const float* __restrict__ b,
                            float* __restrict__ Y, int m, int n, int k) {
  __shared__ float Xs[32][33];
  __shared__ float Ws[32][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row0 = blockIdx.y * 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int t = 0; t < k; t += 32) {
    for (int r = threadIdx.y; r < 32; r += 8) {
      const int xr = row0 + r, xk = t + threadIdx.x, wk = t + r;
      Xs[r][threadIdx.x] = (xr < m && xk < k) ? X[(size_t)xr * k + xk] : 0.f;
      Ws[r][threadIdx.x] = (wk < k && col < n) ? W[(size_t)wk * n + col] : 0.f;
    }
    __syncthreads();
    for (int p = 0; p < 32; ++p) {
      const float wv = Ws[p][threadIdx.x];
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[q] += Xs[threadIdx.y + 8 * q][p] * wv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int row = row0 + threadIdx.y + 8 * q;
    if (row < m && col < n) {
      const float v = acc[q] + b[col];
      Y[(size_t)row * n + col] = GELU_TANH;
    }
  }
}
// launch: linear_gelu<<<(cdiv(n, 32), cdiv(m, 32)), (32, 8)>>>(X, W, b, Y, m, n, k)""".replace("GELU_TANH", GELU_TANH),
    2e-3, 2e-3, "heldout"))

L2.append(task(
    "L2/matmul_f16_bias", 2, "fused_matmul",
    "Mixed-precision linear layer: C[i][j] = sum over p < k of A[i][p] * B[p][j] + bias[j], for every i < m and "
    "j < n. A is f16 [m, k] and B is f16 [k, n], inputs in [-1, 1]; bias is f32 [n]; C is f32 [m, n]. Multiply "
    "and accumulate in f32.",
    {"m": 2048, "n": 2048, "k": 1024}, {"m": 33, "n": 47, "k": 37},
    [buf("A", "f16", ["m", "k"], "in", "uniform(-1,1)"), buf("B", "f16", ["k", "n"], "in", "uniform(-1,1)"),
     buf("bias", "f32", ["n"], "in"), buf("C", "f32", ["m", "n"], "out")],
    """
#include <cuda_fp16.h>
// f16 tiles widened to f32 as they are staged in shared memory.
template <int T>
__global__ void matmul_f16_bias(const __half* __restrict__ A, const __half* __restrict__ B,
                                const float* __restrict__ bias, float* __restrict__ C, int m, int n, int k) {
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  const int row = blockIdx.y * T + threadIdx.y;
  const int col = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < k; t += T) {
    As[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? __half2float(A[(size_t)row * k + t + threadIdx.x]) : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? __half2float(B[(size_t)(t + threadIdx.y) * n + col]) : 0.f;
    __syncthreads();
    for (int i = 0; i < T; ++i) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[(size_t)row * n + col] = acc + bias[col];
}
// launch: matmul_f16_bias<32><<<(cdiv(n, 32), cdiv(m, 32)), (32, 32)>>>(A, B, bias, C, m, n, k)""", 2e-3, 2e-3))


L2.append(task(
    "L2/linear_residual", 2, "fused_matmul",
    "Residual linear layer: Y[i][j] = X[i][j] + b[j] + sum over p < d of X[i][p] * W[p][j], for every i < m and "
    "j < d. X is [m, d], W is [d, d], b is [d], Y is [m, d], all f32 (accumulate in f32).",
    {"m": 2048, "d": 1024}, {"m": 29, "d": 37},
    [buf("X", "f32", ["m", "d"], "in"), buf("W", "f32", ["d", "d"], "in"), buf("b", "f32", ["d"], "in"),
     buf("Y", "f32", ["m", "d"], "out")],
    tiled_matmul("linear_residual", ", const float* __restrict__ bias",
                 "A[(size_t)row * k + col] + acc + bias[col]") + """
// launch: linear_residual<<<(cdiv(d, 16), cdiv(m, 16)), (16, 16)>>>(X, W, b, Y, m, d, d)""", 2e-3, 2e-3))

L2.append(task(
    "L2/dequant_matvec", 2, "fused_matmul",
    "Matrix-vector product with 8-bit weights: y[i] = scale[i] * sum over j < k of (Wq[i][j] - 128) * x[j], for "
    "every i < m. Wq is u8 [m, k] (values 0..255, zero point 128), scale is f32 [m], x is f32 [k], y is f32 [m]; "
    "accumulate in f32.",
    {"m": 4096, "k": 4096}, {"m": 53, "k": 301},
    [buf("Wq", "u8", ["m", "k"], "in", "randint(0,255)"), buf("scale", "f32", ["m"], "in", "uniform(0.001,0.02)"),
     buf("x", "f32", ["k"], "in"), buf("y", "f32", ["m"], "out")],
    """
// One warp per row: lanes dequantise their share of the row, a shuffle tree sums the lanes.
__global__ void dequant_matvec(const unsigned char* __restrict__ Wq, const float* __restrict__ scale,
                               const float* __restrict__ x, float* __restrict__ y, int m, int k) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= m) return;
  const unsigned char* w = Wq + (size_t)row * k;
  float acc = 0.f;
  for (int j = lane; j < k; j += 32) acc += (float)((int)w[j] - 128) * x[j];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = scale[row] * acc;
}
// launch: dequant_matvec<<<cdiv(m, 8), 256>>>(Wq, scale, x, y, m, k)""", 1e-3, 1e-4, "heldout"))


def rows2(tid, family, text, params, cpu_params, bufs, code, atol, rtol, split="train"):
    L2.append(task(tid, 2, family, text, params, cpu_params, bufs, code, atol, rtol, split))


rows2("L2/residual_rmsnorm", "fused_norm",
      "Residual add then RMSNorm, per row r < rows: h[r][c] = x[r][c] + res[r][c] for every c < d, then "
      "y[r][c] = h[r][c] / sqrt((1/d) * sum_j h[r][j]^2 + 1e-6) * w[c]. Write both h and y (f32).",
      {"rows": 4096, "d": 4096}, {"rows": 23, "d": 611},
      [buf("x", "f32", ["rows", "d"], "in"), buf("res", "f32", ["rows", "d"], "in"),
       buf("w", "f32", ["d"], "in", "uniform(0.5,1.5)"), buf("h", "f32", ["rows", "d"], "out"),
       buf("y", "f32", ["rows", "d"], "out")],
      BLOCK_REDUCE + """
__global__ void residual_rmsnorm(const float* __restrict__ x, const float* __restrict__ res,
                                 const float* __restrict__ w, float* __restrict__ h, float* __restrict__ y, int d) {
  __shared__ float sh[32];
  const size_t base = (size_t)blockIdx.x * d;
  float q = 0.f;
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float v = x[base + c] + res[base + c];
    h[base + c] = v;
    q += v * v;
  }
  const float r = rsqrtf(block_sum(q, sh) / d + 1e-6f);
  // Each thread re-reads only the h values it wrote itself, so no barrier is needed for them.
  for (int c = threadIdx.x; c < d; c += blockDim.x) y[base + c] = h[base + c] * r * w[c];
}
// launch: residual_rmsnorm<<<rows, 256>>>(x, res, w, h, y, d)""", 1e-4, 1e-4)

rows2("L2/layernorm_residual", "fused_norm",
      "Residual add then LayerNorm, per row r < rows: with s[c] = x[r][c] + res[r][c], mean = (1/d) sum_c s[c], "
      "var = (1/d) sum_c (s[c] - mean)^2 (biased), out[r][c] = (s[c] - mean) / sqrt(var + 1e-5) * gamma[c] + "
      "beta[c], for every c < d (f32).",
      {"rows": 4096, "d": 2048}, {"rows": 29, "d": 389},
      [buf("x", "f32", ["rows", "d"], "in"), buf("res", "f32", ["rows", "d"], "in"),
       buf("gamma", "f32", ["d"], "in", "uniform(0.5,1.5)"), buf("beta", "f32", ["d"], "in"),
       buf("out", "f32", ["rows", "d"], "out")],
      BLOCK_REDUCE + """
// The summed row is kept in dynamic shared memory (d floats), so x and res are read once.
__global__ void add_layernorm(const float* __restrict__ x, const float* __restrict__ res,
                              const float* __restrict__ gamma, const float* __restrict__ beta,
                              float* __restrict__ out, int d) {
  extern __shared__ float srow[];
  __shared__ float sh[32];
  const size_t base = (size_t)blockIdx.x * d;
  float s = 0.f;
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float v = x[base + c] + res[base + c];
    srow[c] = v;
    s += v;
  }
  const float mean = block_sum(s, sh) / d;
  float q = 0.f;
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float t = srow[c] - mean;
    q += t * t;
  }
  const float rstd = rsqrtf(block_sum(q, sh) / d + 1e-5f);
  for (int c = threadIdx.x; c < d; c += blockDim.x) out[base + c] = (srow[c] - mean) * rstd * gamma[c] + beta[c];
}
// launch: add_layernorm<<<rows, 256, d * 4>>>(x, res, gamma, beta, out, d)""", 1e-4, 1e-4, "heldout")

rows2("L2/scaled_softmax", "fused_softmax",
      "Scaled softmax per row: with z[c] = scale * x[r][c], out[r][c] = exp(z[c] - max_j z[j]) / sum_j exp(z[j] - "
      "max_j z[j]), for every r < rows and c < cols (f32); scale is a float parameter.",
      {"rows": 4096, "cols": 4096, "scale": 0.125}, {"rows": 31, "cols": 509, "scale": 0.35},
      [buf("x", "f32", ["rows", "cols"], "in"), buf("out", "f32", ["rows", "cols"], "out")],
      BLOCK_REDUCE + """
__global__ void scaled_softmax(const float* __restrict__ x, float* __restrict__ out, float scale, int cols) {
  __shared__ float sh[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* orow = out + (size_t)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, scale * xr[c]);
  m = block_max(m, sh);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(scale * xr[c] - m);
  const float inv = 1.f / block_sum(s, sh);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = expf(scale * xr[c] - m) * inv;
}
// launch: scaled_softmax<<<rows, 256>>>(x, out, scale, cols)""", 1e-7, 1e-4, "heldout")

rows2("L2/softmax_f16", "fused_softmax",
      "Half-precision softmax per row: read x[r][c] as f16, compute out[r][c] = exp(x[r][c] - m_r) / sum_j "
      "exp(x[r][j] - m_r) in f32 (m_r the row maximum), and store it rounded to f16, for every r < rows and "
      "c < cols.",
      {"rows": 8192, "cols": 1024}, {"rows": 27, "cols": 301},
      [buf("x", "f16", ["rows", "cols"], "in"), buf("out", "f16", ["rows", "cols"], "out")],
      "#include <cuda_fp16.h>\n" + BLOCK_REDUCE + """
__global__ void softmax_f16(const __half* __restrict__ x, __half* __restrict__ out, int cols) {
  __shared__ float sh[32];
  const __half* xr = x + (size_t)blockIdx.x * cols;
  __half* orow = out + (size_t)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, __half2float(xr[c]));
  m = block_max(m, sh);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(__half2float(xr[c]) - m);
  const float inv = 1.f / block_sum(s, sh);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = __float2half_rn(expf(__half2float(xr[c]) - m) * inv);
}
// launch: softmax_f16<<<rows, 128>>>(x, out, cols)""", 1e-5, 5e-3, "heldout")

rows2("L2/swiglu_bf16", "fused_activation",
      "SwiGLU on bfloat16: x holds [gate | up] halves per row. With g = (float) x[r][c] and u = (float) "
      "x[r][d + c], out[r][c] = (bf16) (g / (1 + exp(-g)) * u), for every r < rows and c < d; compute in f32 and "
      "round to nearest bf16.",
      {"rows": 2048, "d": 4096}, {"rows": 17, "d": 333},
      [buf("x", "bf16", ["rows", "2*d"], "in"), buf("out", "bf16", ["rows", "d"], "out")],
      """
#include <cuda_bf16.h>
__global__ void swiglu_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out, int d) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= d) return;
  const __nv_bfloat16* xr = x + (size_t)blockIdx.y * 2 * d;
  const float g = __bfloat162float(xr[c]);
  const float u = __bfloat162float(xr[d + c]);
  out[(size_t)blockIdx.y * d + c] = __float2bfloat16_rn(g / (1.f + expf(-g)) * u);
}
// launch: swiglu_bf16<<<(cdiv(d, 256), rows), 256>>>(x, out, d)""", 1e-2, 1e-2)

rows2("L2/bias_gelu_erf", "fused_activation",
      "Bias add then exact GELU: with v = x[r][c] + b[c], out[r][c] = 0.5 * v * (1 + erf(v / sqrt(2))), for every "
      "r < rows and c < cols (f32).",
      {"rows": 4096, "cols": 3072}, {"rows": 13, "cols": 389},
      [buf("x", "f32", ["rows", "cols"], "in"), buf("b", "f32", ["cols"], "in"), buf("out", "f32", ["rows", "cols"], "out")],
      """
__global__ void bias_gelu_erf(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ out,
                              int rows, int cols) {
  const size_t total = (size_t)rows * cols;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const float v = x[i] + b[i % cols];
    out[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
  }
}
// launch: bias_gelu_erf<<<min(cdiv(rows * cols, 256), 4096), 256>>>(x, b, out, rows, cols)""", 1e-5, 1e-4)

rows2("L2/cross_entropy", "fused_softmax",
      "Softmax cross-entropy per row: loss[r] = log(sum over j < vocab of exp(logits[r][j])) - "
      "logits[r][labels[r]], for every r < batch (compute the log-sum-exp stably, subtracting the row maximum). "
      "logits is f32 [batch, vocab]; labels is i32 [batch] with values in [0, 999] (vocab >= 1000); loss is f32 "
      "[batch].",
      {"batch": 512, "vocab": 32000}, {"batch": 7, "vocab": 1009},
      [buf("logits", "f32", ["batch", "vocab"], "in"), buf("labels", "i32", ["batch"], "in", "randint(0,999)"),
       buf("loss", "f32", ["batch"], "out")],
      BLOCK_REDUCE + """
// Online log-sum-exp: each thread keeps a running (max, sum) pair over its share of the row.
__global__ void cross_entropy(const float* __restrict__ logits, const int* __restrict__ labels,
                              float* __restrict__ loss, int vocab) {
  __shared__ float sh[32];
  const float* row = logits + (size_t)blockIdx.x * vocab;
  float m = -__int_as_float(0x7f800000), s = 0.f;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float v = row[j];
    if (v > m) {
      s = s * expf(m - v) + 1.f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
  const float gm = block_max(m, sh);
  const float total = block_sum(s * expf(m - gm), sh);  // a thread with no elements has s = 0
  if (threadIdx.x == 0) loss[blockIdx.x] = gm + logf(total) - row[labels[blockIdx.x]];
}
// launch: cross_entropy<<<batch, 512>>>(logits, labels, loss, vocab)""", 1e-4, 1e-4)

SOFTMAX_INPLACE = BLOCK_REDUCE + """
// Softmax of each row of S [rows, cols], in place; -inf entries (masked) become 0.
__global__ void softmax_rows_inplace(float* __restrict__ S, int cols) {
  __shared__ float sh[32];
  float* row = S + (size_t)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_max(m, sh);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
  const float inv = 1.f / block_sum(s, sh);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = expf(row[c] - m) * inv;
}"""

# S[i][j] = scale * q_i . k_j over 16x16 tiles; with CAUSAL, entries j > i are -inf.
QK_SCORES = """
__global__ void qk_scores(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ S,
                          float scale, int T, int d) {
  __shared__ float Qs[16][17];
  __shared__ float Ks[16][17];
  const int i = blockIdx.y * 16 + threadIdx.y;  // query row
  const int j = blockIdx.x * 16 + threadIdx.x;  // key row
  const int kj = blockIdx.x * 16 + threadIdx.y; // key row this thread stages
  float acc = 0.f;
  for (int t = 0; t < d; t += 16) {
    Qs[threadIdx.y][threadIdx.x] = (i < T && t + threadIdx.x < d) ? q[(size_t)i * d + t + threadIdx.x] : 0.f;
    Ks[threadIdx.y][threadIdx.x] = (kj < T && t + threadIdx.x < d) ? k[(size_t)kj * d + t + threadIdx.x] : 0.f;
    __syncthreads();
    for (int p = 0; p < 16; ++p) acc += Qs[threadIdx.y][p] * Ks[threadIdx.x][p];
    __syncthreads();
  }
  if (i < T && j < T) S[(size_t)i * T + j] = (CAUSAL && j > i) ? -__int_as_float(0x7f800000) : acc * scale;
}"""

rows2("L2/attention_softmax", "attention",
      "Attention probabilities: P[i][j] = softmax over j of (scale * sum over c < d of q[i][c] * k[j][c]), i.e. "
      "each row i of scale * q k^T is normalised with a stable softmax, for every i, j < T. q and k are f32 "
      "[T, d]; P is f32 [T, T]; scale is a float parameter.",
      {"T": 2048, "d": 64, "scale": 0.125}, {"T": 37, "d": 19, "scale": 0.2294},
      [buf("q", "f32", ["T", "d"], "in"), buf("k", "f32", ["T", "d"], "in"), buf("P", "f32", ["T", "T"], "out")],
      "#define CAUSAL 0\n" + QK_SCORES.strip("\n") + "\n" + SOFTMAX_INPLACE + """
// launch: qk_scores<<<(cdiv(T, 16), cdiv(T, 16)), (16, 16)>>>(q, k, P, scale, T, d)
// launch: softmax_rows_inplace<<<T, 128>>>(P, T)""", 1e-6, 1e-4)

rows2("L2/causal_attention", "attention",
      "Causal single-head attention: for every i < T, o[i] = sum over j <= i of p_ij * v[j], where p_ij = "
      "exp(s_ij) / sum over l <= i of exp(s_il) and s_ij = scale * (q[i] . k[j]) (keys after position i are "
      "masked out). q, k, v and o are f32 [T, d]; scale is a float parameter.",
      {"T": 1024, "d": 64, "scale": 0.125}, {"T": 37, "d": 19, "scale": 0.2294},
      [buf("q", "f32", ["T", "d"], "in"), buf("k", "f32", ["T", "d"], "in"), buf("v", "f32", ["T", "d"], "in"),
       buf("o", "f32", ["T", "d"], "out")],
      "#define CAUSAL 1\n" + QK_SCORES.strip("\n") + "\n" + SOFTMAX_INPLACE + """
// o = S v: one thread per output element (masked probabilities are exactly 0).
__global__ void probs_times_v(const float* __restrict__ S, const float* __restrict__ v, float* __restrict__ o,
                              int T, int d) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y;
  if (c >= d) return;
  const float* p = S + (size_t)i * T;
  float acc = 0.f;
  for (int j = 0; j <= i; ++j) acc += p[j] * v[(size_t)j * d + c];
  o[(size_t)i * d + c] = acc;
}
// scratch: S f32[T * T]
// launch: qk_scores<<<(cdiv(T, 16), cdiv(T, 16)), (16, 16)>>>(q, k, S, scale, T, d)
// launch: softmax_rows_inplace<<<T, 128>>>(S, T)
// launch: probs_times_v<<<(cdiv(d, 64), T), 64>>>(S, v, o, T, d)""", 1e-5, 1e-4, "heldout")

rows2("L2/rope", "fused_elementwise",
      "Rotary position embedding (rotate-half convention) of x [T, H, 2*half] (f32) into out (same shape): for "
      "token t, head h and i < half, with theta = t * base^(-i / half) computed in f32 as t * powf(base, -(float)i "
      "/ half), c = cos(theta), s = sin(theta), a = x[t][h][i], b = x[t][h][half + i]: out[t][h][i] = a * c - b * "
      "s and out[t][h][half + i] = b * c + a * s. base is a float parameter. Use accurate sinf/cosf (the angles "
      "reach thousands of radians, where the __sinf intrinsics are inaccurate).",
      {"T": 2048, "H": 32, "half": 64, "base": 10000.0}, {"T": 13, "H": 3, "half": 9, "base": 10000.0},
      [buf("x", "f32", ["T", "H", "2*half"], "in"), buf("out", "f32", ["T", "H", "2*half"], "out")],
      """
// One thread per rotated pair (t, h, i).
__global__ void rope(const float* __restrict__ x, float* __restrict__ out, float base, int T, int H, int half) {
  const long long pair = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (pair >= (long long)T * H * half) return;
  const int i = (int)(pair % half);
  const long long th = pair / half;  // t * H + h
  const int t = (int)(th / H);
  const float theta = (float)t * powf(base, -(float)i / half);
  float s, c;
  sincosf(theta, &s, &c);
  const size_t row = (size_t)th * 2 * half;
  const float a = x[row + i], b = x[row + half + i];
  out[row + i] = a * c - b * s;
  out[row + half + i] = b * c + a * s;
}
// launch: rope<<<cdiv(T * H * half, 256), 256>>>(x, out, base, T, H, half)""", 2e-3, 2e-3)

rows2("L2/cosine_similarity", "fused_reduction",
      "Row-wise cosine similarity: out[r] = dot(a[r], b[r]) / max(|a[r]| * |b[r]|, 1e-8), where dot and the "
      "Euclidean norms run over c < d, for every r < rows. a and b are f32 [rows, d]; out is f32 [rows].",
      {"rows": 16384, "d": 1024}, {"rows": 41, "d": 259},
      [buf("a", "f32", ["rows", "d"], "in"), buf("b", "f32", ["rows", "d"], "in"), buf("out", "f32", ["rows"], "out")],
      """
// One warp per row; three running sums reduced together with shuffles.
__global__ void cosine_rows(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                            int rows, int d) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* ar = a + (size_t)row * d;
  const float* br = b + (size_t)row * d;
  float ab = 0.f, aa = 0.f, bb = 0.f;
  for (int c = lane; c < d; c += 32) {
    const float x = ar[c], y = br[c];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  for (int o = 16; o > 0; o >>= 1) {
    ab += __shfl_xor_sync(0xffffffffu, ab, o);
    aa += __shfl_xor_sync(0xffffffffu, aa, o);
    bb += __shfl_xor_sync(0xffffffffu, bb, o);
  }
  if (lane == 0) out[row] = ab / fmaxf(sqrtf(aa) * sqrtf(bb), 1e-8f);
}
// launch: cosine_rows<<<cdiv(rows, 4), 128>>>(a, b, out, rows, d)""", 1e-5, 1e-4, "heldout")

rows2("L2/conv1d_bias_relu", "fused_convolution",
      "Multi-channel 1-D convolution (no padding, stride 1, cross-correlation) with bias and ReLU: out[o][i] = "
      "max(0, bias[o] + sum over c < cin and j < k of w[o][c][j] * x[c][i + j]), for every o < cout and "
      "i < n - k + 1. x is [cin, n], w is [cout, cin, k], bias is [cout], out is [cout, n - k + 1], all f32.",
      {"cin": 64, "cout": 128, "n": 4096, "k": 5}, {"cin": 3, "cout": 5, "n": 301, "k": 5},
      [buf("x", "f32", ["cin", "n"], "in"), buf("w", "f32", ["cout", "cin", "k"], "in"),
       buf("bias", "f32", ["cout"], "in"), buf("out", "f32", ["cout", "n - k + 1"], "out")],
      """
// One thread per output; the grid's y dimension is the output channel.
__global__ void conv1d_bias_relu(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ bias, float* __restrict__ out, int cin, int n, int k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int o = blockIdx.y;
  const int on = n - k + 1;
  if (i >= on) return;
  float acc = bias[o];
  for (int c = 0; c < cin; ++c) {
    const float* xc = x + (size_t)c * n + i;
    const float* wc = w + ((size_t)o * cin + c) * k;
    for (int j = 0; j < k; ++j) acc += wc[j] * xc[j];
  }
  out[(size_t)o * on + i] = fmaxf(acc, 0.f);
}
// launch: conv1d_bias_relu<<<(cdiv(n - k + 1, 128), cout), 128>>>(x, w, bias, out, cin, n, k)""", 1e-4, 1e-4,
      "heldout")

rows2("L2/adam_step", "fused_optimizer",
      "One fused Adam update of n parameters, in place, for every i < n: m[i] = beta1 * m[i] + (1 - beta1) * g[i]; "
      "v[i] = beta2 * v[i] + (1 - beta2) * g[i]^2; p[i] = p[i] - lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + eps), "
      "using the updated m and v. p, m and v are f32 and updated in place; g is f32 and read only. lr, beta1, "
      "beta2, eps and the bias corrections bc1 = 1 - beta1^t and bc2 = 1 - beta2^t are float parameters.",
      {"n": N, "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "bc1": 0.6513215599, "bc2": 0.00995511979},
      {"n": 4099, "lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "bc1": 0.5904, "bc2": 0.0490099501},
      [buf("p", "f32", ["n"], "inout"), buf("g", "f32", ["n"], "in"), buf("m", "f32", ["n"], "inout"),
       buf("v", "f32", ["n"], "inout", "uniform(0,1)")],
      """
__global__ void adam_step(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                          float* __restrict__ v, float lr, float beta1, float beta2, float eps, float bc1, float bc2,
                          int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i];
  const float mi = beta1 * m[i] + (1.f - beta1) * gi;
  const float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}
// launch: adam_step<<<cdiv(n, 256), 256>>>(p, g, m, v, lr, beta1, beta2, eps, bc1, bc2, n)""", 1e-5, 1e-4,
      "heldout")


def suite_text(tasks):
    ids = [t["id"] for t in tasks]
    assert len(ids) == len(set(ids)), "duplicate task ids"
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks)


def main(argv):
    """Writes the suites, or with --check exits 1 when the committed files differ from them."""
    check = "--check" in argv
    stale = []
    for name, tasks in (("level1.jsonl", L1), ("level2.jsonl", L2)):
        path = os.path.join(HERE, name)
        text = suite_text(tasks)
        if check:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    stale.append(name)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        held = sum(t["split"] == "heldout" for t in tasks)
        print(f"{name}: {len(tasks)} tasks, {held} heldout")
    if stale:
        print("out of date with make_suites.py: " + ", ".join(stale) + " (run python3 tasks/make_suites.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
