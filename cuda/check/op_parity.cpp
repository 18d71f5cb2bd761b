// Op parity against PyTorch's float64 reference, on any backend (op_parity.h).
#include "cuda/check/op_parity.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace leap::cuda::check {

namespace {

constexpr double kBf16Gemm = 1e-2;
constexpr double kFp32 = 1e-4;
constexpr double kDoubleSum = 1e-12;  // double accumulation of exact squares: order only
constexpr double kExact = 0.0;        // copies (the KV-cache append) must be bit-exact

double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

// The backend buffers of one case, freed with it.
class Buffers {
 public:
  explicit Buffers(backend::Backend& be) : be_(&be) {}
  ~Buffers() {
    for (float* p : owned_) be_->free_floats(p);
  }
  float* up(const std::vector<float>& host) {
    float* p = zeros(host.size());
    be_->upload(p, host.data(), host.size());
    return p;
  }
  float* zeros(size_t n) {
    owned_.push_back(be_->alloc_floats(n));
    return owned_.back();
  }
  std::vector<float> down(const float* p, size_t n) {
    std::vector<float> h(n);
    be_->download(h.data(), p, n);
    return h;
  }

 private:
  backend::Backend* be_;
  std::vector<float*> owned_;
};

}  // namespace

void OpComparison::add(const char* name, const std::vector<float>& got,
                       const std::vector<float>& want, double tol) {
  const double err = normalised_error(got, want);
  const bool pass = err <= tol;
  all_pass = all_pass && pass;
  std::fprintf(stderr, "  %-22s normalised error %.3e (bound %.0e) %s\n", name, err, tol,
               pass ? "ok" : "FAIL");
  record->set(name, err);
}

void OpComparison::add_scalar(const char* name, double got, double want, double tol) {
  const double err = std::fabs(got - want) / (want != 0 ? std::fabs(want) : 1.0);
  const bool pass = err <= tol;
  all_pass = all_pass && pass;
  std::fprintf(stderr, "  %-22s relative error   %.3e (bound %.0e) %s\n", name, err, tol,
               pass ? "ok" : "FAIL");
  record->set(name, err);
}

namespace {

#define REF(var, expr) LEAP_ASSIGN_OR_RETURN(auto var, expr)

Status check_matmul(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("matmul", "N"));
  REF(ic, ref.dim("matmul", "IC"));
  REF(oc, ref.dim("matmul", "OC"));
  const int N = static_cast<int>(n), IC = static_cast<int>(ic), OC = static_cast<int>(oc);
  REF(x, ref.f32("mm_x"));
  REF(w, ref.f32("mm_w"));
  REF(b, ref.f32("mm_b"));
  REF(dy, ref.f32("mm_dy"));
  REF(y, ref.f32("mm_y"));
  REF(dx, ref.f32("mm_dx"));
  REF(dw, ref.f32("mm_dw"));
  REF(db, ref.f32("mm_db"));
  Buffers buf(be);
  float *gx = buf.up(x), *gw = buf.up(w), *gb = buf.up(b), *gdy = buf.up(dy);
  float *gy = buf.zeros(y.size()), *gdx = buf.zeros(dx.size()), *gdw = buf.zeros(dw.size()),
        *gdb = buf.zeros(db.size());
  be.matmul_forward(gy, gx, gw, gb, N, IC, OC);
  be.matmul_backward(gdx, gdw, gdb, gdy, gx, gw, N, IC, OC);
  cmp.add("matmul_forward", buf.down(gy, y.size()), y, kBf16Gemm);
  cmp.add("matmul_dinp", buf.down(gdx, dx.size()), dx, kBf16Gemm);
  cmp.add("matmul_dweight", buf.down(gdw, dw.size()), dw, kBf16Gemm);
  cmp.add("matmul_dbias", buf.down(gdb, db.size()), db, kFp32);
  return Status::ok();
}

Status check_rmsnorm(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("rmsnorm", "N"));
  REF(c, ref.dim("rmsnorm", "C"));
  REF(eps, ref.dim("rmsnorm", "eps"));
  const int N = static_cast<int>(n), C = static_cast<int>(c);
  REF(x, ref.f32("rms_x"));
  REF(w, ref.f32("rms_w"));
  REF(dy, ref.f32("rms_dy"));
  REF(y, ref.f32("rms_y"));
  REF(dx, ref.f32("rms_dx"));
  REF(dw, ref.f32("rms_dw"));
  Buffers buf(be);
  float *gx = buf.up(x), *gw = buf.up(w), *gdy = buf.up(dy), *gy = buf.zeros(y.size()),
        *grstd = buf.zeros(static_cast<size_t>(N)), *gdx = buf.zeros(dx.size()),
        *gdw = buf.zeros(dw.size());
  be.rmsnorm_forward(gy, grstd, gx, gw, N, C, static_cast<float>(eps));
  be.rmsnorm_backward(gdx, gdw, gdy, gx, gw, grstd, N, C);
  cmp.add("rmsnorm_forward", buf.down(gy, y.size()), y, kFp32);
  cmp.add("rmsnorm_dinp", buf.down(gdx, dx.size()), dx, kFp32);
  cmp.add("rmsnorm_dweight", buf.down(gdw, dw.size()), dw, kFp32);
  return Status::ok();
}

Status check_swiglu(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("swiglu", "N"));
  REF(i, ref.dim("swiglu", "I"));
  const int N = static_cast<int>(n), I = static_cast<int>(i);
  REF(x, ref.f32("swiglu_x"));
  REF(dy, ref.f32("swiglu_dy"));
  REF(y, ref.f32("swiglu_y"));
  REF(dx, ref.f32("swiglu_dx"));
  Buffers buf(be);
  float *gx = buf.up(x), *gdy = buf.up(dy), *gy = buf.zeros(y.size()), *gdx = buf.zeros(dx.size());
  be.swiglu_forward(gy, gx, N, I);
  be.swiglu_backward(gdx, gdy, gx, N, I);
  cmp.add("swiglu_forward", buf.down(gy, y.size()), y, kFp32);
  cmp.add("swiglu_dinp", buf.down(gdx, dx.size()), dx, kFp32);
  return Status::ok();
}

Status check_attention(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(b, ref.dim("attention", "B"));
  REF(t, ref.dim("attention", "T"));
  REF(h, ref.dim("attention", "H"));
  REF(hkv, ref.dim("attention", "Hkv"));
  REF(d, ref.dim("attention", "D"));
  const int B = static_cast<int>(b), T = static_cast<int>(t), H = static_cast<int>(h),
            Hkv = static_cast<int>(hkv), D = static_cast<int>(d);
  REF(q, ref.f32("att_q"));
  REF(k, ref.f32("att_k"));
  REF(v, ref.f32("att_v"));
  REF(dy, ref.f32("att_dy"));
  REF(y, ref.f32("att_y"));
  REF(dq, ref.f32("att_dq"));
  REF(dk, ref.f32("att_dk"));
  REF(dv, ref.f32("att_dv"));
  Buffers buf(be);
  float *gq = buf.up(q), *gk = buf.up(k), *gv = buf.up(v), *gdy = buf.up(dy),
        *gy = buf.zeros(y.size()), *gatt = buf.zeros(be.attention_saved_floats(B, T, H, D)),
        *gdq = buf.zeros(dq.size()), *gdk = buf.zeros(dk.size()), *gdv = buf.zeros(dv.size());
  be.attention_forward(gy, gatt, gq, gk, gv, B, T, H, Hkv, D);
  be.attention_backward(gdq, gdk, gdv, gdy, gatt, gq, gk, gv, B, T, H, Hkv, D);
  cmp.add("attention_forward", buf.down(gy, y.size()), y, kFp32);
  cmp.add("attention_dq", buf.down(gdq, dq.size()), dq, kFp32);
  cmp.add("attention_dk", buf.down(gdk, dk.size()), dk, kFp32);
  cmp.add("attention_dv", buf.down(gdv, dv.size()), dv, kFp32);
  return Status::ok();
}

Status check_logprob(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("logprob", "N"));
  REF(vv, ref.dim("logprob", "V"));
  const int N = static_cast<int>(n), V = static_cast<int>(vv);
  REF(logits, ref.f32("lp_logits"));
  REF(targets, ref.i32("lp_targets"));
  REF(g, ref.f32("lp_g"));
  REF(lp, ref.f32("lp_out"));
  REF(dlogits, ref.f32("lp_dlogits"));
  Buffers buf(be);
  float *gl = buf.up(logits), *gg = buf.up(g), *glp = buf.zeros(lp.size()),
        *glse = buf.zeros(static_cast<size_t>(N)), *gdl = buf.zeros(dlogits.size());
  be.logprob_forward(glp, glse, gl, targets.data(), N, V, 1.0f);
  be.logprob_backward(gdl, gg, gl, glse, targets.data(), N, V, 1.0f);
  cmp.add("logprob_forward", buf.down(glp, lp.size()), lp, kFp32);
  cmp.add("logprob_dlogits", buf.down(gdl, dlogits.size()), dlogits, kFp32);
  // At a sampling temperature (inverse s = 1/0.7): RL's log-probabilities are of softmax(s * z).
  REF(s, ref.f32("lpt_s"));
  REF(lpt, ref.f32("lpt_out"));
  REF(dlpt, ref.f32("lpt_dlogits"));
  if (s.size() != 1) return invalid_input("op reference lpt_s: one inverse temperature expected");
  be.zero(gdl, dlogits.size());
  be.logprob_forward(glp, glse, gl, targets.data(), N, V, s[0]);
  be.logprob_backward(gdl, gg, gl, glse, targets.data(), N, V, s[0]);
  cmp.add("logprob_forward_tempered", buf.down(glp, lpt.size()), lpt, kFp32);
  cmp.add("logprob_dlogits_tempered", buf.down(gdl, dlpt.size()), dlpt, kFp32);
  return Status::ok();
}

Status check_rope(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("rope", "N"));
  REF(h, ref.dim("rope", "H"));
  REF(d, ref.dim("rope", "D"));
  const int N = static_cast<int>(n), H = static_cast<int>(h), D = static_cast<int>(d);
  REF(x, ref.f32("rope_x"));
  REF(dy, ref.f32("rope_dy"));
  REF(cos_t, ref.f32("rope_cos"));
  REF(sin_t, ref.f32("rope_sin"));
  REF(pos, ref.i32("rope_pos"));
  REF(y, ref.f32("rope_y"));
  REF(dx, ref.f32("rope_dx"));
  Buffers buf(be);
  float *gx = buf.up(x), *gdy = buf.up(dy), *gc = buf.up(cos_t), *gs = buf.up(sin_t),
        *gy = buf.zeros(y.size()), *gdx = buf.zeros(dx.size());
  be.rope_forward(gy, gx, gc, gs, pos.data(), N, H, D);
  be.rope_backward(gdx, gdy, gc, gs, pos.data(), N, H, D);
  cmp.add("rope_forward", buf.down(gy, y.size()), y, kFp32);
  cmp.add("rope_dinp", buf.down(gdx, dx.size()), dx, kFp32);
  return Status::ok();
}

Status check_embedding(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("embedding", "N"));
  REF(c, ref.dim("embedding", "C"));
  const int N = static_cast<int>(n), C = static_cast<int>(c);
  REF(wte, ref.f32("emb_wte"));
  REF(tokens, ref.i32("emb_tokens"));
  REF(dy, ref.f32("emb_dy"));
  REF(y, ref.f32("emb_y"));
  REF(dwte, ref.f32("emb_dwte"));
  Buffers buf(be);
  float *gw = buf.up(wte), *gdy = buf.up(dy), *gy = buf.zeros(y.size()),
        *gdw = buf.zeros(dwte.size());
  be.embedding_forward(gy, tokens.data(), gw, N, C);
  be.embedding_backward(gdw, gdy, tokens.data(), N, C);
  cmp.add("embedding_forward", buf.down(gy, y.size()), y, kFp32);
  cmp.add("embedding_dwte", buf.down(gdw, dwte.size()), dwte, kFp32);
  return Status::ok();
}

Status check_adamw(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(n, ref.dim("adamw", "n"));
  REF(lr, ref.dim("adamw", "lr"));
  REF(b1, ref.dim("adamw", "beta1"));
  REF(b2, ref.dim("adamw", "beta2"));
  REF(eps, ref.dim("adamw", "eps"));
  REF(wd, ref.dim("adamw", "weight_decay"));
  REF(scale, ref.dim("adamw", "grad_scale"));
  REF(t, ref.dim("adamw", "t"));
  REF(p0, ref.f32("adamw_p"));
  REF(m0, ref.f32("adamw_m"));
  REF(v0, ref.f32("adamw_v"));
  REF(g, ref.f32("adamw_g"));
  REF(p1, ref.f32("adamw_p1"));
  REF(m1, ref.f32("adamw_m1"));
  REF(v1, ref.f32("adamw_v1"));
  Buffers buf(be);
  float *gp = buf.up(p0), *gm = buf.up(m0), *gv = buf.up(v0), *gg = buf.up(g);
  be.adamw_update(gp, gm, gv, gg, static_cast<size_t>(n), static_cast<float>(lr),
                  static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps),
                  static_cast<float>(wd), static_cast<float>(scale), static_cast<int>(t));
  // The update is lr-sized against O(1) parameters: compare the change, not the parameters,
  // or any error would vanish below the parameters' own size.
  std::vector<float> got = buf.down(gp, p0.size()), dp_got(p0.size()), dp_want(p0.size());
  for (size_t i = 0; i < p0.size(); ++i) {
    dp_got[i] = got[i] - p0[i];
    dp_want[i] = p1[i] - p0[i];
  }
  cmp.add("adamw_param_update", dp_got, dp_want, kFp32);
  cmp.add("adamw_m", buf.down(gm, m1.size()), m1, kFp32);
  cmp.add("adamw_v", buf.down(gv, v1.size()), v1, kFp32);
  return Status::ok();
}

Status check_sum_squares(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(want, ref.dim("sum_squares", "want"));
  REF(x, ref.f32("sumsq_x"));
  Buffers buf(be);
  const float* gx = buf.up(x);
  // Exact double squares summed in another order: only the order's rounding differs.
  cmp.add_scalar("sum_squares", be.sum_squares(gx, x.size()), want, kDoubleSum);
  return Status::ok();
}

Status check_decode(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  REF(maxt, ref.dim("decode", "maxT"));
  REF(h, ref.dim("decode", "H"));
  REF(hkv, ref.dim("decode", "Hkv"));
  REF(d, ref.dim("decode", "D"));
  REF(rows, ref.dim("decode", "n"));
  const int maxT = static_cast<int>(maxt), H = static_cast<int>(h), Hkv = static_cast<int>(hkv),
            D = static_cast<int>(d), n = static_cast<int>(rows);
  REF(kc, ref.f32("dec_kc"));
  REF(vc, ref.f32("dec_vc"));
  REF(q, ref.f32("dec_q"));
  REF(k, ref.f32("dec_k"));
  REF(v, ref.f32("dec_v"));
  REF(slot, ref.i32("dec_slot"));
  REF(len, ref.i32("dec_len"));
  REF(kc1, ref.f32("dec_kc1"));
  REF(vc1, ref.f32("dec_vc1"));
  REF(out, ref.f32("dec_out"));
  std::vector<int32_t> pos(len.size());
  for (size_t r = 0; r < len.size(); ++r) pos[r] = len[r] - 1;  // the current token's place
  Buffers buf(be);
  float *gkc = buf.up(kc), *gvc = buf.up(vc), *gq = buf.up(q), *gk = buf.up(k), *gv = buf.up(v),
        *gout = buf.zeros(out.size());
  be.kv_cache_write(gkc, gvc, gk, gv, slot.data(), pos.data(), n, maxT, Hkv, D,
                    backend::KvDtype::kF32);
  be.attention_decode(gout, gq, gkc, gvc, slot.data(), 1, len.data(), n, maxT, H, Hkv, D,
                      backend::KvDtype::kF32);
  cmp.add("kv_cache_write_k", buf.down(gkc, kc1.size()), kc1, kExact);
  cmp.add("kv_cache_write_v", buf.down(gvc, vc1.size()), vc1, kExact);
  cmp.add("attention_decode", buf.down(gout, out.size()), out, kFp32);
  return Status::ok();
}

#undef REF

}  // namespace

Status compare_ops(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp) {
  for (auto* check : {check_matmul, check_rmsnorm, check_swiglu, check_attention, check_logprob,
                      check_rope, check_embedding, check_adamw, check_sum_squares, check_decode}) {
    LEAP_RETURN_IF_ERROR(check(ref, be, cmp));
  }
  return Status::ok();
}

}  // namespace leap::cuda::check
