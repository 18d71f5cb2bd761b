// The CUDA backend against the CPU backend (the reference, itself checked against PyTorch):
// GEMMs forward and backward (bf16 operands, fp32 accumulation, so normalised errors of a few
// 1e-3), accumulation semantics, the bf16 weight copies refreshed after every write, attention
// with its smaller saved state, a tiny model's forward, backward, AdamW step and KV-cache
// decode, a bf16 KL reference widened a layer at a time, token selection on the device, weights
// whose matrices are bf16 only (optim.master_weights = optimizer), and a checkpoint round trip of
// device-resident weights and moments. Every test skips
// where no CUDA device exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/token_select.h"
#include "common/bf16.h"
#include "common/rng.h"
#include "cuda/cuda_backend.h"
#include "io/checkpoint_dir.h"
#include "model/model_config.h"
#include "model/optimizer.h"
#include "model/reference_policy.h"
#include "model/token_batch.h"
#include "model/transformer.h"
#include "tests/gpu/gpu_test_env.h"

namespace leap::cuda {
namespace {

// bf16 operands round each input to 8 bits of mantissa: errors of ~2^-9 per product, averaged
// over K, give normalised errors near 3e-3; 1e-2 leaves room without hiding a wrong result
// (a transposed or stale operand gives errors near 1).
constexpr double kGemmTol = 1e-2;

class DeviceVec {
 public:
  DeviceVec(backend::Backend& be, const std::vector<float>& host) : be_(&be), n_(host.size()) {
    p_ = be.alloc_floats(n_);
    be.upload(p_, host.data(), n_);
  }
  ~DeviceVec() { be_->free_floats(p_); }
  float* get() { return p_; }
  std::vector<float> read() const {
    std::vector<float> h(n_);
    be_->download(h.data(), p_, n_);
    return h;
  }

 private:
  backend::Backend* be_;
  size_t n_;
  float* p_;
};

class CudaBackendTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    gpu_ = std::make_unique<CudaBackend>(*ctx_);
  }
  void TearDown() override { gpu_.reset(); }
  backend::CpuBackend cpu_{1};
  std::unique_ptr<CudaBackend> gpu_;
};

TEST_F(CudaBackendTest, MatmulForwardWithUnalignedBiasAndOutput) {
  const int N = 37, IC = 72, OC = 50;
  auto x = randn(size_t(N) * IC, 1), w = randn(size_t(OC) * IC, 2, 0.1f), b = randn(OC, 3);
  std::vector<float> ref(size_t(N) * OC);
  cpu_.matmul_forward(ref.data(), x.data(), w.data(), b.data(), N, IC, OC);
  // The bias one float into its buffer too, as a bias view into the parameter arena may be.
  std::vector<float> b_padded(b.size() + 1, 0.0f);
  std::copy(b.begin(), b.end(), b_padded.begin() + 1);
  DeviceVec dx(*gpu_, x), dw(*gpu_, w), db(*gpu_, b_padded);
  // The output one float into its buffer: 4-byte alignment must choose a fitting algorithm.
  DeviceVec dout(*gpu_, std::vector<float>(ref.size() + 1, 0.0f));
  gpu_->matmul_forward(dout.get() + 1, dx.get(), dw.get(), db.get() + 1, N, IC, OC);
  auto got = dout.read();
  got.erase(got.begin());
  const double err = normalised_error(got, ref);
  std::printf("matmul_forward normalised error %.3e\n", err);
  EXPECT_LT(err, kGemmTol);
}

TEST_F(CudaBackendTest, MatmulBackwardAccumulates) {
  const int N = 29, IC = 40, OC = 24;
  auto x = randn(size_t(N) * IC, 4), w = randn(size_t(OC) * IC, 5, 0.2f);
  auto dy = randn(size_t(N) * OC, 6);
  // Prefilled gradients: the backward must add to them, not overwrite.
  auto dx0 = randn(x.size(), 7), dw0 = randn(w.size(), 8), db0 = randn(OC, 9);
  auto rdx = dx0, rdw = dw0, rdb = db0;
  cpu_.matmul_backward(rdx.data(), rdw.data(), rdb.data(), dy.data(), x.data(), w.data(), N, IC,
                       OC);
  DeviceVec gx(*gpu_, x), gw(*gpu_, w), gdy(*gpu_, dy), gdx(*gpu_, dx0), gdw(*gpu_, dw0),
      gdb(*gpu_, db0);
  gpu_->matmul_backward(gdx.get(), gdw.get(), gdb.get(), gdy.get(), gx.get(), gw.get(), N, IC, OC);
  const double ex = normalised_error(gdx.read(), rdx), ew = normalised_error(gdw.read(), rdw),
               eb = normalised_error(gdb.read(), rdb);
  std::printf("matmul_backward normalised errors dinp %.3e dweight %.3e dbias %.3e\n", ex, ew, eb);
  EXPECT_LT(ex, kGemmTol);
  EXPECT_LT(ew, kGemmTol);
  EXPECT_LT(eb, 1e-5);  // fp32 GEMV: only the summation order differs
}

TEST_F(CudaBackendTest, WeightCopiesFollowEveryWrite) {
  const int N = 8, IC = 32, OC = 16;
  auto x = randn(size_t(N) * IC, 10), w1 = randn(size_t(OC) * IC, 11), w2 = randn(w1.size(), 12);
  DeviceVec gx(*gpu_, x), gw(*gpu_, w1), gout(*gpu_, std::vector<float>(size_t(N) * OC));
  std::vector<float> ref(size_t(N) * OC);
  auto check = [&](const std::vector<float>& w, const char* after) {
    cpu_.matmul_forward(ref.data(), x.data(), w.data(), nullptr, N, IC, OC);
    gpu_->matmul_forward(gout.get(), gx.get(), gw.get(), nullptr, N, IC, OC);
    EXPECT_LT(normalised_error(gout.read(), ref), kGemmTol) << "stale bf16 weights " << after;
  };
  check(w1, "at first use");
  gpu_->upload(gw.get(), w2.data(), w2.size());
  check(w2, "after upload");
  gpu_->zero(gw.get() + 5, 7);  // a write to part of the weight
  auto w3 = w2;
  std::fill(w3.begin() + 5, w3.begin() + 12, 0.0f);
  check(w3, "after a partial zero");
  // One AdamW step with a large learning rate moves every weight.
  auto g = randn(w3.size(), 13);
  DeviceVec gg(*gpu_, g), gm(*gpu_, std::vector<float>(g.size())),
      gv(*gpu_, std::vector<float>(g.size()));
  std::vector<float> m(g.size()), v(g.size());
  cpu_.adamw_update(w3.data(), m.data(), v.data(), g.data(), w3.size(), 0.1f, 0.9f, 0.999f, 1e-8f,
                    0.0f, 1.0f, 1);
  gpu_->adamw_update(gw.get(), gm.get(), gv.get(), gg.get(), w3.size(), 0.1f, 0.9f, 0.999f, 1e-8f,
                     0.0f, 1.0f, 1);
  check(w3, "after adamw_update");
}

TEST_F(CudaBackendTest, AttentionForwardBackwardAgainstCpu) {
  const int B = 2, T = 37, H = 4, Hkv = 2, D = 16;
  const size_t nq = size_t(B) * T * H * D, nk = size_t(B) * T * Hkv * D;
  auto q = randn(nq, 20), k = randn(nk, 21), v = randn(nk, 22), dy = randn(nq, 23);
  std::vector<float> out(nq), att(cpu_.attention_saved_floats(B, T, H, D));
  cpu_.attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
  auto dq = randn(nq, 24), dk = randn(nk, 25), dv = randn(nk, 26);  // prefilled: accumulate
  auto gq0 = dq, gk0 = dk, gv0 = dv;
  cpu_.attention_backward(dq.data(), dk.data(), dv.data(), dy.data(), att.data(), q.data(),
                          k.data(), v.data(), B, T, H, Hkv, D);
  EXPECT_LT(gpu_->attention_saved_floats(B, T, H, D), att.size());
  DeviceVec gq(*gpu_, q), gk(*gpu_, k), gv(*gpu_, v), gdy(*gpu_, dy),
      gout(*gpu_, std::vector<float>(nq)),
      gatt(*gpu_, std::vector<float>(gpu_->attention_saved_floats(B, T, H, D))), gdq(*gpu_, gq0),
      gdk(*gpu_, gk0), gdv(*gpu_, gv0);
  gpu_->attention_forward(gout.get(), gatt.get(), gq.get(), gk.get(), gv.get(), B, T, H, Hkv, D);
  gpu_->attention_backward(gdq.get(), gdk.get(), gdv.get(), gdy.get(), gatt.get(), gq.get(),
                           gk.get(), gv.get(), B, T, H, Hkv, D);
  const double eo = normalised_error(gout.read(), out), eq = normalised_error(gdq.read(), dq),
               ek = normalised_error(gdk.read(), dk), ev = normalised_error(gdv.read(), dv);
  std::printf("attention normalised errors out %.3e dq %.3e dk %.3e dv %.3e\n", eo, eq, ek, ev);
  // fp32 storage and arithmetic: only the summation order differs from the CPU.
  EXPECT_LT(eo, 1e-5);
  EXPECT_LT(eq, 1e-4);
  EXPECT_LT(ek, 1e-4);
  EXPECT_LT(ev, 1e-4);
}

model::ModelConfig tiny_config() {
  auto cfg =
      model::read_model_config(std::string(LEAP_SOURCE_DIR) + "/tests/train/tiny_config.json");
  EXPECT_TRUE(cfg.has_value()) << cfg.status().message();
  return *cfg;
}

model::TokenBatch tiny_batch(int V) {
  Rng rng(99);
  std::vector<std::vector<int32_t>> seqs;
  for (int len : {23, 17, 30}) {
    std::vector<int32_t> s(static_cast<size_t>(len));
    for (auto& t : s) t = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(V));
    seqs.push_back(s);
  }
  return model::TokenBatch::from_sequences(seqs);
}

// Forward log-probs, every parameter gradient and the gradient norm of `cfg` on both backends.
void compare_train_step(const model::ModelConfig& cfg, backend::CpuBackend& cpu, CudaBackend* gpu) {
  model::Transformer mc(cfg, cpu), mg(cfg, *gpu);
  mc.init_random(7);
  mg.init_random(7);
  const model::TokenBatch batch = tiny_batch(cfg.vocab_size);
  const size_t BT = static_cast<size_t>(batch.B) * batch.T;
  std::vector<float> lc(BT), lg(BT);
  ASSERT_TRUE(mc.forward(batch, lc.data()).is_ok());
  ASSERT_TRUE(mg.forward(batch, lg.data()).is_ok());
  double max_diff = 0;
  for (size_t i = 0; i < BT; ++i) max_diff = std::fmax(max_diff, std::fabs(lc[i] - lg[i]));
  std::printf("tiny model: max |logprob diff| %.3e\n", max_diff);
  EXPECT_LT(max_diff, 5e-2);
  EXPECT_LT(normalised_error(lg, lc), kGemmTol);

  auto dlp = randn(BT, 31, 0.1f);
  mc.zero_grad();
  mg.zero_grad();
  mc.backward(dlp.data());
  mg.backward(dlp.data());
  std::vector<float> gc(mc.num_params()), gg(mg.num_params());
  cpu.download(gc.data(), mc.grads(), gc.size());
  gpu->download(gg.data(), mg.grads(), gg.size());
  // Per tensor, so a wrong layer is named.
  for (const auto& t : mc.layout().tensors()) {
    std::vector<float> a(gg.begin() + t.offset, gg.begin() + t.offset + t.numel),
        b(gc.begin() + t.offset, gc.begin() + t.offset + t.numel);
    EXPECT_LT(normalised_error(a, b), 3e-2) << t.name;
  }
  EXPECT_NEAR(gpu->sum_squares(mg.grads(), gg.size()), cpu.sum_squares(mc.grads(), gc.size()),
              3e-2 * cpu.sum_squares(mc.grads(), gc.size()));
}

TEST_F(CudaBackendTest, TinyModelTrainStepAgainstCpu) {
  compare_train_step(tiny_config(), cpu_, gpu_.get());
}

TEST_F(CudaBackendTest, TinyQwen2WithBiasesUntiedAgainstCpu) {
  model::ModelConfig cfg = tiny_config();
  cfg.model_type = "qwen2";
  cfg.qkv_bias = true;
  cfg.tie_word_embeddings = false;
  compare_train_step(cfg, cpu_, gpu_.get());
}

// Prefill and decode over the paged cache, in fp32 and in bf16 (the backend's default), the CPU
// backend with a cache of the same dtype as the reference.
TEST_F(CudaBackendTest, TinyModelDecodeAgainstCpu) {
  const model::ModelConfig cfg = tiny_config();
  model::Transformer mc(cfg, cpu_), mg(cfg, *gpu_);
  mc.init_random(8);
  mg.init_random(8);
  const model::TokenBatch prompts = tiny_batch(cfg.vocab_size);
  for (const backend::KvDtype dtype : {backend::KvDtype::kF32, backend::KvDtype::kBf16}) {
    const char* tag = backend::kv_dtype_name(dtype);
    model::KvCache cc(cfg, cpu_, prompts.B, 64, 16, 0, dtype), cg(cfg, *gpu_, prompts.B, 64, 16, 0, dtype);
    const size_t V = static_cast<size_t>(cfg.vocab_size);
    std::vector<float> lc(prompts.B * V), lg(prompts.B * V);
    ASSERT_TRUE(mc.prefill(prompts, cc, lc.data()).is_ok());
    ASSERT_TRUE(mg.prefill(prompts, cg, lg.data()).is_ok());
    EXPECT_LT(normalised_error(lg, lc), kGemmTol) << tag;
    std::vector<int32_t> tokens = {5, 100, 7}, slots = {2, 0, 1};
    for (int step = 0; step < 4; ++step) {
      mc.decode(tokens.data(), slots.data(), 3, cc, lc.data());
      mg.decode(tokens.data(), slots.data(), 3, cg, lg.data());
      EXPECT_LT(normalised_error(lg, lc), kGemmTol) << tag << " decode step " << step;
    }
  }
}

// The bf16 KL reference widens each layer into one scratch buffer, so the GEMMs' bf16 copies of
// that scratch must follow every widening: a stale copy would run every layer with the weights
// of the one before. Against the CPU's bf16 reference, twice, after the policies moved on.
TEST_F(CudaBackendTest, Bf16KlReferenceAgainstCpu) {
  model::ModelConfig cfg = tiny_config();
  model::Transformer mc(cfg, cpu_), mg(cfg, *gpu_);
  mc.init_random(9, 0.2f);
  mg.init_random(9, 0.2f);
  auto rc = model::ReferencePolicy::copy_of(mc, "cpu", model::ReferenceDtype::kBf16);
  auto rg = model::ReferencePolicy::copy_of(mg, "gpu", model::ReferenceDtype::kBf16);
  EXPECT_EQ(rg->hash(), rc->hash()) << "the device rounds to bf16 as the host does";
  mc.init_random(10, 0.2f);
  mg.init_random(10, 0.2f);
  const model::TokenBatch batch = tiny_batch(cfg.vocab_size);
  const size_t BT = static_cast<size_t>(batch.B) * batch.T;
  std::vector<float> lc(BT), lg(BT), own(BT);
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(rc->logprobs(mc, batch, lc.data()).is_ok());
    ASSERT_TRUE(rg->logprobs(mg, batch, lg.data()).is_ok());
    EXPECT_LT(normalised_error(lg, lc), kGemmTol) << "pass " << pass;
    ASSERT_TRUE(mc.forward(batch, own.data()).is_ok());  // the policy's own forward between
    EXPECT_GT(normalised_error(own, lc), 2 * kGemmTol) << "the reference is not the policy";
  }
}

// Token selection where the logits are (cuda/kernels/sample.cuh through sample_rows): the ids of
// the host rule on the same logits, for a real vocabulary's width (152k ids, a 4k-id tail that
// is never drawn), greedy, plain sampling, top-k and top-p; only ids and log-probabilities come
// back. (The kernel's rule is checked in detail in the PTX interpreter: test_cuda_kernels.)
TEST_F(CudaBackendTest, SampleRowsChoosesWhatTheHostRuleChooses) {
  const int N = 4, V = 151936, below = 147968;
  std::vector<float> logits(size_t(N) * V);
  Rng rng(77);
  for (auto& x : logits) x = static_cast<float>(rng.normal()) * 3.0f;
  DeviceVec dz(*gpu_, logits);
  const std::vector<double> uniforms = {0.1234, 0.5678, 0.9012, 0.3456};
  const std::vector<backend::TokenRule> rules = {
      {.temperature = 0.0}, {.temperature = 0.8}, {.temperature = 1.0, .top_k = 50},
      {.temperature = 0.7, .top_p = 0.9}, {.temperature = 1.0, .top_p = 0.8, .top_k = 400}};
  for (const auto& rule : rules) {
    std::vector<int32_t> ids(N, -1);
    std::vector<float> lps(N);
    gpu_->sample_rows(ids.data(), lps.data(), dz.get(), uniforms.data(), N, V, rule, below);
    for (int r = 0; r < N; ++r) {
      float want_lp = 0;
      const int32_t want = backend::select_token(logits.data() + size_t(r) * V, V, rule,
                                                 uniforms[r], &want_lp, below);
      EXPECT_EQ(ids[r], want) << "temperature " << rule.temperature << " top_k " << rule.top_k
                              << " top_p " << rule.top_p << ", row " << r;
      EXPECT_NEAR(lps[r], want_lp, 1e-4) << "row " << r;
    }
  }
}

// optim.master_weights = optimizer: a buffer whose matrices are bf16 only (cuda/bf16_weights.h)
// behaves as the CPU backend's does (which rounds in fp32 floats), bit for bit, through every
// memory op, across the end of the matrices too.
TEST_F(CudaBackendTest, Bf16WeightsHoldWhatTheCpuHolds) {
  const size_t n = 5000, part = 3001;
  auto host = randn(n, 51), other = randn(n, 52);
  float* c = cpu_.alloc_weights(n, part);
  float* g = gpu_->alloc_weights(n, part);
  auto read = [&](const float* p, size_t count) {
    std::vector<float> h(count);
    gpu_->download(h.data(), p, count);
    return h;
  };
  auto same = [&](const char* after) {
    EXPECT_EQ(read(g, n), std::vector<float>(c, c + n)) << after;
  };
  cpu_.upload(c, host.data(), n);
  gpu_->upload(g, host.data(), n);
  same("upload");
  DeviceVec plain(*gpu_, other);
  cpu_.copy(c + 2990, other.data(), 20);  // across the end of the matrices
  gpu_->copy(g + 2990, plain.get(), 20);
  same("copy in");
  cpu_.zero(c + 10, 5);
  gpu_->zero(g + 10, 5);
  same("zero");
  std::vector<float> out = read(plain.get(), n);
  gpu_->copy(plain.get() + 100, g + 2900, 200);  // out of the matrices and the tail
  std::copy(c + 2900, c + 3100, out.begin() + 100);
  EXPECT_EQ(plain.read(), out) << "copy out";
  float* packed = gpu_->alloc_floats(n / 2 + 1);
  gpu_->round_to_bf16(packed, g, n);  // a KL reference's copy: the matrices as they are
  std::vector<uint16_t> bits(n);
  gpu_->download(reinterpret_cast<float*>(bits.data()), packed, n / 2);
  for (size_t i = 0; i + 1 < n; ++i) ASSERT_EQ(bits[i], f32_to_bf16(c[i])) << i;
  gpu_->free_floats(packed);
  cpu_.free_floats(c);
  gpu_->free_floats(g);
}

// A model whose matrices are bf16 only computes what an fp32 model holding the same values does
// on the GPU (its GEMMs read the same bf16; the embedding the same rows): the same log-probs and
// gradients, bit for bit; and AdamW with fp32 masters writes their rounding back.
TEST_F(CudaBackendTest, Bf16WeightsComputeWhatFp32WeightsOfTheSameValuesDo) {
  model::ModelConfig cfg = tiny_config();
  cfg.tie_word_embeddings = false;  // the embedding looked up in the bf16 buffer
  model::Transformer mb(cfg, *gpu_, model::GradientBuffer::kFlat,
                        model::WeightStorage::kBf16Matrices);
  model::Transformer mf(cfg, *gpu_);
  mb.init_random(12);
  gpu_->copy(mf.params(), mb.params(), mb.num_params());
  const model::TokenBatch batch = tiny_batch(cfg.vocab_size);
  const size_t BT = static_cast<size_t>(batch.B) * batch.T, P = mb.num_params();
  std::vector<float> lb(BT), lf(BT);
  ASSERT_TRUE(mb.forward(batch, lb.data()).is_ok());
  ASSERT_TRUE(mf.forward(batch, lf.data()).is_ok());
  EXPECT_EQ(lb, lf);
  auto dlp = randn(BT, 53, 0.1f);
  mb.zero_grad();
  mf.zero_grad();
  mb.backward(dlp.data());
  mf.backward(dlp.data());
  std::vector<float> gb(P), gf(P);
  gpu_->download(gb.data(), mb.grads(), P);
  gpu_->download(gf.data(), mf.grads(), P);
  EXPECT_EQ(gb, gf);
  model::OptimConfig oc;
  oc.lr = 1e-2;
  model::AdamW ob(oc, mb), of(oc, mf);
  ASSERT_NE(ob.masters(), nullptr);
  ob.step();
  of.step();
  std::vector<float> wb(P), wf(P), masters(P);
  gpu_->download(wb.data(), mb.params(), P);
  gpu_->download(wf.data(), mf.params(), P);
  gpu_->download(masters.data(), ob.masters(), P);
  EXPECT_EQ(masters, wf) << "the masters are the fp32 model's weights after the same step";
  const size_t nd = mb.layout().decay_size();
  size_t off = 0;
  for (size_t i = 0; i < P; ++i) off += wb[i] != (i < nd ? bf16_to_f32(f32_to_bf16(wf[i])) : wf[i]);
  EXPECT_EQ(off, 0u) << "the model does not hold the masters' rounding";
}

TEST_F(CudaBackendTest, CheckpointRoundTripFromDeviceMemory) {
  // Weights and AdamW moments live in device memory: saving must download them and loading
  // upload them. One AdamW step makes the moments non-zero; a fresh model and optimizer loaded
  // from the checkpoint must hold exactly the same bits.
  const model::ModelConfig cfg = tiny_config();
  model::OptimConfig oc;
  oc.lr = 1e-2;
  model::Transformer m(cfg, *gpu_);
  m.init_random(9);
  model::AdamW opt(oc, m);
  const model::TokenBatch batch = tiny_batch(cfg.vocab_size);
  std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T);
  ASSERT_TRUE(m.forward(batch, lp.data()).is_ok());
  auto dlp = randn(lp.size(), 41, 0.1f);
  m.zero_grad();
  m.backward(dlp.data());
  opt.step();
  const std::string dir = ::testing::TempDir() + "/leap_cuda_ckpt";
  ASSERT_TRUE(io::save_checkpoint({dir, 1, nlohmann::json::object(), 1, ""}, m, opt).is_ok());

  model::Transformer m2(cfg, *gpu_);
  model::AdamW opt2(oc, m2);
  auto state = io::load_checkpoint(dir + "/checkpoints/" + io::checkpoint_dir_name(1), m2, opt2);
  ASSERT_TRUE(state.has_value()) << state.status().message();
  const size_t P = m.num_params();
  auto read = [&](const float* p) {
    std::vector<float> h(P);
    gpu_->download(h.data(), p, P);
    return h;
  };
  EXPECT_EQ(read(m2.params()), read(m.params()));
  EXPECT_EQ(read(opt2.m()), read(opt.m()));
  EXPECT_EQ(read(opt2.v()), read(opt.v()));
  EXPECT_GT(gpu_->sum_squares(opt.m(), P), 0.0);
}

}  // namespace
}  // namespace leap::cuda
