// `leap_gpu_check ops --ref=DIR`: the CUDA backend's ops against PyTorch (float64 on this
// machine, from benchmarks/gpu/op_reference.py), by normalised error ||got - want|| / ||want||.
// Bounds: 1e-2 where a GEMM rounds its operands to bf16, 1e-4 for the fp32 kernels (only the
// summation order differs). Backward outputs start at zero, so accumulation gives the gradient.
#include <cmath>
#include <cstdio>
#include <vector>

#include "cuda/check/checks.h"
#include "cuda/check/reference_dir.h"
#include "cuda/cuda_backend.h"

namespace leap::cuda::check {

namespace {

constexpr double kBf16Gemm = 1e-2;
constexpr double kFp32 = 1e-4;

double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

// Device buffers for one case, freed with it.
class Buffers {
 public:
  explicit Buffers(CudaBackend& be) : be_(&be) {}
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
  CudaBackend* be_;
  std::vector<float*> owned_;
};

struct Comparison {
  JsonRecord* record;
  bool all_pass = true;
  void add(const char* name, const std::vector<float>& got, const std::vector<float>& want,
           double tol) {
    const double err = normalised_error(got, want);
    const bool pass = err <= tol;
    all_pass = all_pass && pass;
    std::fprintf(stderr, "  %-22s normalised error %.3e (bound %.0e) %s\n", name, err, tol,
                 pass ? "ok" : "FAIL");
    record->set(name, err);
  }
};

#define REF(var, expr) LEAP_ASSIGN_OR_RETURN(auto var, expr)

Status check_matmul(const ReferenceDir& ref, CudaBackend& be, Comparison& cmp) {
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

Status check_rmsnorm(const ReferenceDir& ref, CudaBackend& be, Comparison& cmp) {
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

Status check_swiglu(const ReferenceDir& ref, CudaBackend& be, Comparison& cmp) {
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

Status check_attention(const ReferenceDir& ref, CudaBackend& be, Comparison& cmp) {
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

Status check_logprob(const ReferenceDir& ref, CudaBackend& be, Comparison& cmp) {
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
  be.logprob_forward(glp, glse, gl, targets.data(), N, V);
  be.logprob_backward(gdl, gg, gl, glse, targets.data(), N, V);
  cmp.add("logprob_forward", buf.down(glp, lp.size()), lp, kFp32);
  cmp.add("logprob_dlogits", buf.down(gdl, dlogits.size()), dlogits, kFp32);
  return Status::ok();
}

#undef REF

}  // namespace

Expected<JsonRecord> run_ops(const CheckArgs& args) {
  LEAP_ASSIGN_OR_RETURN(auto ref, ReferenceDir::load(args.str("ref")));
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, size_t{32} << 20));
  CudaBackend be(*ctx);
  JsonRecord r;
  Comparison cmp{&r};
  for (auto* check : {check_matmul, check_rmsnorm, check_swiglu, check_attention, check_logprob}) {
    LEAP_RETURN_IF_ERROR(check(ref, be, cmp));
  }
  r.set("reference", "PyTorch float64 (benchmarks/gpu/op_reference.py)");
  if (!cmp.all_pass)
    r.mark_failed();
  else
    r.set("pass", true);
  return r;
}

}  // namespace leap::cuda::check
