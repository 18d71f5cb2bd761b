// See reference_policy.h.
#include "model/reference_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/bf16.h"
#include "common/check.h"
#include "common/fnv_hash.h"
#include "model/checkpoint.h"

namespace leap::model {
namespace {

const TensorInfo& tensor(const ParameterLayout& layout, const char* name) {
  const TensorInfo* t = layout.find(name);
  LEAP_CHECK(t != nullptr, "the layout has no tensor " << name);
  return *t;
}

// Values hashed or converted per download: bounds the host buffer whatever the model's size.
constexpr size_t kHostPiece = size_t{1} << 24;

}  // namespace

// The matrices [0, decay_size) are stored in bf16, two values to a float, so each must start on
// a pair; the vectors after them stay fp32.
bool bf16_storable(const ParameterLayout& layout) {
  return layout.decay_size() % 2 == 0 &&
         std::all_of(layout.tensors().begin(), layout.tensors().end(), [&](const TensorInfo& t) {
           return t.offset >= layout.decay_size() || t.offset % 2 == 0;
         });
}

ReferenceDtype reference_dtype(const std::string& option, bool device_backend) {
  LEAP_CHECK(option == "auto" || option == "fp32" || option == "bf16",
             "rl.kl_reference_dtype = " << option << ": use auto, fp32 or bf16");
  return option == "bf16" || (option == "auto" && device_backend) ? ReferenceDtype::kBf16
                                                                  : ReferenceDtype::kF32;
}

const char* reference_dtype_name(ReferenceDtype d) {
  return d == ReferenceDtype::kBf16 ? "bf16" : "fp32";
}

// The forward's pieces of a bf16 copy, widened on the backend when asked: each layer into one
// compact layer buffer (parameters.h), the embedding and then the LM head and final norm into one
// buffer of the largest of them. The backend's bf16 compute copies of these buffers are made
// again after each widening (CUDA: widen_from_bf16 marks them stale).
class ReferencePolicy::Bf16Layers final : public WeightSource {
 public:
  explicit Bf16Layers(const ReferencePolicy& ref)
      : ref_(&ref),
        be_(ref.be_),
        wte_(tensor(ref.layout_, "model.embed_tokens.weight")),
        lnf_(tensor(ref.layout_, "model.norm.weight")),
        lm_head_(ref.layout_.find("lm_head.weight") ? *ref.layout_.find("lm_head.weight") : wte_),
        layer_floats_(ref.layout_.layer_floats()),
        head_floats_(std::max(wte_.numel, lm_head_.numel + lnf_.numel)),
        layer_(be_->alloc_floats(layer_floats_)),
        head_(be_->alloc_floats(head_floats_)),
        // Every layer widens into the same buffer, so its views are the same for every layer;
        // what differs is where each layer's tensors lie in the copy (worked out once).
        layer_views_(ref.layout_.compact_layer_views(layer_)) {
    for (int l = 0; l < ref.layout_.config().num_hidden_layers; ++l)
      layer_ranges_.push_back(ref.layout_.layer_ranges(l));
  }
  ~Bf16Layers() override {
    be_->free_floats(layer_);
    be_->free_floats(head_);
  }
  Bf16Layers(const Bf16Layers&) = delete;
  Bf16Layers& operator=(const Bf16Layers&) = delete;

  const float* embedding() override {
    widen(head_, wte_.offset, wte_.numel);
    return head_;
  }
  LayerViews layer(int l) override {
    size_t at = 0;
    for (const auto& [off, n] : layer_ranges_.at(static_cast<size_t>(l))) {
      widen(layer_ + at, off, n);
      at += n;
    }
    return layer_views_;
  }
  RestViews head() override {
    widen(head_, lm_head_.offset, lm_head_.numel);
    widen(head_ + lm_head_.numel, lnf_.offset, lnf_.numel);
    return {nullptr, head_, head_ + lm_head_.numel};
  }
  size_t scratch_floats() const { return layer_floats_ + head_floats_; }

 private:
  void widen(float* dst, size_t off, size_t n) { ref_->read(dst, off, n, false); }

  const ReferencePolicy* ref_;
  backend::Backend* be_;
  TensorInfo wte_, lnf_, lm_head_;
  size_t layer_floats_, head_floats_;
  float* layer_;
  float* head_;
  LayerViews layer_views_;
  std::vector<std::vector<std::pair<size_t, size_t>>> layer_ranges_;  // per layer, in the copy
};

ReferencePolicy::ReferencePolicy(const Transformer& model, std::string source, ReferenceDtype dtype)
    : be_(&model.backend()),
      layout_(model.layout()),
      n_(model.num_params()),
      dtype_(dtype == ReferenceDtype::kBf16 && bf16_storable(layout_) ? dtype : ReferenceDtype::kF32),
      bf16_end_(dtype_ == ReferenceDtype::kBf16 ? layout_.decay_size() : 0),
      weights_(be_->alloc_floats(store_floats())),
      source_(std::move(source)) {
  if (dtype_ == ReferenceDtype::kBf16) layers_ = std::make_unique<Bf16Layers>(*this);
}

size_t ReferencePolicy::store_floats() const {
  return bf16_end_ / 2 + (n_ - bf16_end_);
}

void ReferencePolicy::read(float* dst, size_t off, size_t n, bool to_host) const {
  // The part in bf16 (a matrix) is widened; the part in fp32 (a vector) is copied.
  const size_t in_bf16 = off < bf16_end_ ? std::min(n, bf16_end_ - off) : 0;
  if (in_bf16 > 0) {
    if (to_host) {
      std::vector<uint16_t> bits(in_bf16);  // off and in_bf16 are even: whole floats
      be_->download(reinterpret_cast<float*>(bits.data()), weights_ + off / 2, in_bf16 / 2);
      bf16_to_f32(bits.data(), in_bf16, dst);
    } else {
      be_->widen_from_bf16(dst, weights_ + off / 2, in_bf16);
    }
  }
  if (n > in_bf16) {
    const float* src = weights_ + bf16_end_ / 2 + (off + in_bf16 - bf16_end_);
    if (to_host)
      be_->download(dst + in_bf16, src, n - in_bf16);
    else
      be_->copy(dst + in_bf16, src, n - in_bf16);
  }
}

ReferencePolicy::~ReferencePolicy() {
  layers_.reset();
  be_->free_floats(weights_);
}

size_t ReferencePolicy::backend_floats() const {
  return store_floats() + (layers_ ? layers_->scratch_floats() : 0);
}

void ReferencePolicy::set_hash() {
  std::vector<float> piece(std::min(n_, kHostPiece));
  uint64_t h = kFnv1aBasis;
  for (size_t off = 0; off < n_; off += piece.size()) {
    const size_t n = std::min(piece.size(), n_ - off);
    read(piece.data(), off, n, true);
    h = fnv1a_floats(piece.data(), n, h);
  }
  hash_ = fmt::format("{:016x}", h);
}

std::unique_ptr<ReferencePolicy> ReferencePolicy::copy_of(const Transformer& model,
                                                          std::string source, ReferenceDtype dtype) {
  std::unique_ptr<ReferencePolicy> ref(new ReferencePolicy(model, std::move(source), dtype));
  const size_t b = ref->bf16_end_;
  if (b > 0) model.backend().round_to_bf16(ref->weights_, model.params(), b);
  model.backend().copy(ref->weights_ + b / 2, model.params() + b, ref->n_ - b);
  ref->set_hash();
  return ref;
}

Expected<std::unique_ptr<ReferencePolicy>> ReferencePolicy::load(const std::string& dir,
                                                                 const Transformer& model,
                                                                 ReferenceDtype dtype) {
  std::unique_ptr<ReferencePolicy> ref(new ReferencePolicy(model, dir, dtype));
  const size_t b = ref->bf16_end_;
  std::vector<uint16_t> bits;
  Status st = stream_weights(dir, model, [&](const TensorInfo& t, const float* data) {
    if (t.offset >= b) {  // a vector (or everything, in fp32): kept as it is
      model.backend().upload(ref->weights_ + b / 2 + (t.offset - b), data, t.numel);
      return;
    }
    bits.resize(t.numel);
    f32_to_bf16(data, t.numel, bits.data());
    model.backend().upload(ref->weights_ + t.offset / 2, reinterpret_cast<const float*>(bits.data()),
                           t.numel / 2);
  });
  if (!st) return st.with_context("loading the KL reference policy (rl.kl_reference)");
  ref->set_hash();
  return ref;
}

Status ReferencePolicy::logprobs(Transformer& policy, const TokenBatch& batch, float* out) {
  LEAP_CHECK(policy.num_params() == n_,
             "the reference has " << n_ << " parameters, the policy " << policy.num_params());
  if (layers_) return policy.forward_with(*layers_, batch, out);
  FlatWeights flat(layout_, weights_);
  return policy.forward_with(flat, batch, out);
}

}  // namespace leap::model
