// The frozen reference policy of the KL term (rl.kl_beta > 0): a copy of the weights a policy
// rank holds beside its own, by default the run's initial weights. Its log-probabilities come
// from the policy's own Transformer run over these weights (Transformer::forward_with), so it
// costs one more copy of the weights (on the CUDA backend also their bf16 compute copy) and one
// extra forward per update micro-batch, and no activations or gradients of its own.
//
// `source()` says where the weights came from and `hash()` fingerprints them (FNV-1a over the
// fp32 values in layout order); checkpoints record both, so a resumed run can check that it
// keeps the same reference.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::model {

class ReferencePolicy {
 public:
  // A copy of `model`'s current weights; `source` names them (e.g. the model folder).
  static std::unique_ptr<ReferencePolicy> copy_of(const Transformer& model, std::string source);
  // The weights of the model folder DIR, which must have `model`'s layout.
  static Expected<std::unique_ptr<ReferencePolicy>> load(const std::string& dir,
                                                         const Transformer& model);
  ~ReferencePolicy();
  ReferencePolicy(const ReferencePolicy&) = delete;
  ReferencePolicy& operator=(const ReferencePolicy&) = delete;

  // Per-token log-probabilities of `batch` under the reference, in `policy`'s convention (B*T
  // host floats). `policy` lends its code and activation buffers; its weights are not touched.
  Status logprobs(Transformer& policy, const TokenBatch& batch, float* out) const;

  const std::string& source() const { return source_; }
  const std::string& hash() const { return hash_; }  // 16 hex digits
  const float* weights() const { return weights_; }  // backend memory

 private:
  ReferencePolicy(backend::Backend& be, size_t n, std::string source);
  void set_hash(const float* host);

  backend::Backend* be_;
  size_t n_;
  float* weights_;
  std::string source_, hash_;
};

}  // namespace leap::model
