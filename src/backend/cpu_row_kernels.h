// Row kernels of the CPU backend: the element-wise inner loops of softmax, SwiGLU and the
// log-softmax, each over one contiguous row. They are compiled twice (x86-64-v3 with AVX2, and
// the baseline) and picked at load time, so the binary stays portable while the loops use
// 8-wide vectors where the CPU has them. FP contraction stays off (ISO C++ mode): both versions
// compute each element identically; only the order of the row sums differs between them.
#pragma once

namespace leap::backend::rows {

// s[0..n) <- softmax(s[0..n)), max-subtracted.
void softmax(float* s, int n);
// dr[j] <- p[j] * (dr[j] - sum_k p[k] dr[k]) * scale: the softmax backward from dP to dS.
void softmax_backward(float* dr, const float* p, int n, float scale);
// y = silu(g) * u.
void swiglu_forward(float* y, const float* g, const float* u, int I);
// dg += dy * u * silu'(g); du += dy * silu(g).
void swiglu_backward(float* dg, float* du, const float* dy, const float* g, const float* u, int I);
// log(sum exp s*z[0..V)) (s > 0; s = 1 computes exactly what no scaling would).
float logsumexp(const float* z, int V, float s);
// dz[v] -= g * exp(s*z[v] - lse).
void softmax_scaled_sub(float* dz, const float* z, float lse, float g, int V, float s);

}  // namespace leap::backend::rows
