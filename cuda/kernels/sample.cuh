// Token selection on the device: backend/token_select.h's rule for each row of (N, V) logits, so
// that only the chosen id and its log-probability leave the GPU (the host path downloads N x V
// fp32 logits a token and sorts them for top-p). The rule, per row, with n = the ids that may be
// drawn (n_draw) and m = the row's maximum over all V:
//   s = 1 / temperature (1 when greedy), the log-probability's inverse temperature;
//   lse = s*m + log(sum over all V of exp(s*x - s*m)) (a double sum, an fp32 result);
//   greedy (temperature <= 0): the first maximum among ids below n;
//   otherwise weights w = exp((x - m) / temperature) (double) over the candidates
//     - every id below n, in id order, when nothing truncates; or, in the order logit
//       descending then id ascending,
//     - the top_k first (when 0 < top_k < n), then
//     - the shortest prefix holding top_p of their weight (when top_p < 1);
//   and the draw is the first candidate, in that order, whose running weight exceeds
//   uniform * total (the last candidate of nonzero weight when rounding leaves none).
//   The log-probability is s*x[chosen] - lse: the tempered distribution over all V, not
//   truncated by top-k or top-p (the training forward's).
//
// Without a sort: each candidate order is the descending order of a 64-bit key (the logit's
// order-preserving bits above the complemented id; or the complemented id alone), and "the
// top_k-th candidate", "the top-p cut" and "the draw" are each the largest key whose running
// count or weight (over the candidates with keys at or above it) crosses a target. A radix
// descent finds that key 4 bits at a time: each pass is one sweep over the row into a 16-bin
// histogram of counts and weights, summed over the block in a fixed order (so every run gives
// the same bits). Greedy and the top-k cut compare logits and counts, so they are exact. The
// weights are another matter: CUDA's exp and the host's may differ by an ulp, and the sums run in
// another order, so a draw can differ from the host's when the uniform falls within rounding of a
// boundary between two candidates, and the top-p cut can keep one candidate more or fewer when
// the prefix's weight is within rounding of top_p * total (the draw then differs over a range of
// uniforms). The log-probability's lse differs by about an ulp. Rare, but not bit-identical.
//
// Launch: grid N, block kSampleThreads (a multiple of 32, at most 1024), no dynamic smem.
// Inputs: uniforms[N] (doubles in [0, 1); unused when greedy); 1 <= n_draw <= V.
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kSampleThreads = 256;
constexpr int kSampleBins = 16;  // 4 key bits a pass

struct SampleShared {
  double weight[kSampleBins][32];  // [bin][warp]
  int count[kSampleBins][32];
  double dsum[32];
  float fmax[32];
  u64 kmax[32];
  u64 prefix;   // the descent's key bits fixed so far
  double above;  // the running measure of candidates above the prefix's range
};

// The float's bits, mapped so that unsigned order is numeric order; -0 maps as +0 (the host
// compares them equal, so they tie and fall back to the id).
__device__ __forceinline__ unsigned ordered_bits(float x) {
  if (x == 0.0f) x = 0.0f;
  const unsigned b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Descending key order is the candidate order: by logit (then id), or by id alone.
__device__ __forceinline__ u64 sample_key(float x, int v, bool by_logit) {
  const u64 low = 0xffffffffull - static_cast<unsigned>(v);
  return by_logit ? (static_cast<u64>(ordered_bits(x)) << 32) | low : low;
}

__device__ __forceinline__ int key_id(u64 key) {
  return static_cast<int>(0xffffffffull - (key & 0xffffffffull));
}

__device__ __forceinline__ double sample_weight(float x, float m, double inv_t) {
  return exp((static_cast<double>(x) - static_cast<double>(m)) * inv_t);
}

__device__ inline float block_max_f(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < warps ? scratch[lane] : neg_inf();
  r = warp_max(r);
  __syncthreads();
  return r;
}

__device__ inline u64 block_max_key(u64 v, u64* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const u64 other = __shfl_xor_sync(kFullMask, v, o);
    v = other > v ? other : v;
  }
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  u64 r = lane < warps ? scratch[lane] : 0ull;
  for (int o = 16; o > 0; o >>= 1) {
    const u64 other = __shfl_xor_sync(kFullMask, r, o);
    r = other > r ? other : r;
  }
  __syncthreads();
  return r;
}

// What a descent looks for among the candidates (ids below n with key >= lo): the largest key x
// whose running measure M(x) (the count, or the weight, of candidates with keys >= x) exceeds
// `target` (strict) or reaches it; the smallest candidate key when none does. Returns x and
// writes M(x) to *at.
struct DescentGoal {
  bool count;   // measure candidates by count (else by weight)
  bool strict;  // M(x) > target (else >=)
  double target;
};

template <class T>
__device__ u64 descend(const T* z, int n, float m, double inv_t, bool by_logit, u64 lo,
                       DescentGoal goal, double* at, SampleShared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // every thread has read the previous descent's result
  if (threadIdx.x == 0) {
    sh.prefix = 0;
    sh.above = 0.0;
  }
  __syncthreads();
  double last_bin_measure = 0.0;
  for (int s = by_logit ? 60 : 28; s >= 0; s -= 4) {
    const u64 prefix = sh.prefix;
    double wb[kSampleBins];
    int cb[kSampleBins];
#pragma unroll
    for (int b = 0; b < kSampleBins; ++b) {
      wb[b] = 0.0;
      cb[b] = 0;
    }
    for (int v = threadIdx.x; v < n; v += blockDim.x) {
      const float x = to_float(z[v]);
      const u64 key = sample_key(x, v, by_logit);
      if (key < lo) continue;
      if (s + 4 < 64 && (key >> (s + 4)) != (prefix >> (s + 4))) continue;
      const int bin = static_cast<int>((key >> s) & (kSampleBins - 1));
      const double w = goal.count ? 1.0 : sample_weight(x, m, inv_t);
      // Selects instead of an indexed store keep the bins in registers.
#pragma unroll
      for (int b = 0; b < kSampleBins; ++b) {
        wb[b] += bin == b ? w : 0.0;
        cb[b] += bin == b ? 1 : 0;
      }
    }
#pragma unroll
    for (int b = 0; b < kSampleBins; ++b) {
      const double ws = warp_sum(wb[b]);
      const int cs = warp_sum(cb[b]);
      if (lane == 0) {
        sh.weight[b][warp] = ws;
        sh.count[b][warp] = cs;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // Bins from the largest key down: the first whose running measure crosses the target,
      // else the last non-empty one (the smallest candidate). Measured by weight, a bin whose
      // candidates all weigh 0 (underflowed) is empty: it can cross no target, and the fallback
      // must not take a token of probability 0 (the host rule's last candidate of nonzero weight).
      double run = sh.above, run_before_last = sh.above, last_measure = 0.0;
      int pick = -1, last = -1;
      for (int b = kSampleBins - 1; b >= 0; --b) {
        double wsum = 0.0;
        int csum = 0;
        for (int w = 0; w < warps; ++w) {
          wsum += sh.weight[b][w];
          csum += sh.count[b][w];
        }
        if (csum == 0 || (!goal.count && wsum == 0.0)) continue;
        const double next = run + wsum;
        if (goal.strict ? next > goal.target : next >= goal.target) {
          pick = b;
          last_measure = wsum;
          break;
        }
        run_before_last = run;
        last = b;
        last_measure = wsum;
        run = next;
      }
      if (pick < 0) {
        pick = last;
        run = run_before_last;
      }
      sh.prefix = prefix | (static_cast<u64>(pick) << s);
      sh.above = run;
      sh.weight[0][0] = last_measure;  // read below, after the barrier
    }
    __syncthreads();
    last_bin_measure = sh.weight[0][0];
    __syncthreads();
  }
  // After the last pass the prefix is one candidate's whole key, the only one in its bin.
  *at = sh.above + last_bin_measure;
  return sh.prefix;
}

template <class T>
__global__ void sample_rows(int* ids, float* logprobs, const T* logits, const double* uniforms,
                            int N, int V, int n_draw, double temperature, int top_k, double top_p) {
  __shared__ SampleShared sh;
  const int row = blockIdx.x;
  if (row >= N) return;
  const T* z = logits + static_cast<u64>(row) * V;
  const int n = n_draw < V ? n_draw : V;

  float m = neg_inf();
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, to_float(z[v]));
  m = block_max_f(m, sh.fmax);
  const float s = temperature > 0.0 ? static_cast<float>(1.0 / temperature) : 1.0f;
  const float sm = __fmul_rn(s, m);
  double sum = 0.0;
  for (int v = threadIdx.x; v < V; v += blockDim.x)
    sum += exp(static_cast<double>(__fmul_rn(s, to_float(z[v])) - sm));
  sum = block_sum(sum, sh.dsum);
  const float lse = sm + static_cast<float>(log(sum));

  int chosen = 0;
  if (temperature <= 0.0) {
    u64 best = 0;
    for (int v = threadIdx.x; v < n; v += blockDim.x) {
      const u64 k = sample_key(to_float(z[v]), v, true);
      best = k > best ? k : best;
    }
    chosen = key_id(block_max_key(best, sh.kmax));
  } else {
    // Weights are measured from the largest drawable logit (ids below n), not from a padded
    // row's larger one, under which every drawable weight could underflow (token_select.cpp).
    float md = neg_inf();
    for (int v = threadIdx.x; v < n; v += blockDim.x) md = fmaxf(md, to_float(z[v]));
    m = block_max_f(md, sh.fmax);
    const double inv_t = 1.0 / temperature;
    const bool cut_k = top_k > 0 && top_k < n;
    const bool by_logit = cut_k || top_p < 1.0;
    double at = 0.0;
    u64 lo = 0;
    if (cut_k) lo = descend(z, n, m, inv_t, true, 0ull, DescentGoal{true, false, double(top_k)}, &at, sh);
    double total = 0.0;
    for (int v = threadIdx.x; v < n; v += blockDim.x) {
      const float x = to_float(z[v]);
      if (sample_key(x, v, by_logit) >= lo) total += sample_weight(x, m, inv_t);
    }
    total = block_sum(total, sh.dsum);
    if (top_p < 1.0) {
      lo = descend(z, n, m, inv_t, true, lo, DescentGoal{false, false, top_p * total}, &at, sh);
      total = at;
    }
    const double u = uniforms[row] * total;
    chosen = key_id(descend(z, n, m, inv_t, by_logit, lo, DescentGoal{false, true, u}, &at, sh));
  }
  if (threadIdx.x == 0) {
    ids[row] = chosen;
    logprobs[row] = __fmul_rn(s, to_float(z[chosen])) - lse;
  }
}

}  // namespace leap::cuda::kernels
