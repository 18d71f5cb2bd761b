// The frozen reference policy of the KL term (rl.kl_beta > 0): a copy of the weights a policy
// rank holds beside its own, by default the run's initial weights. Its log-probabilities come
// from the policy's own Transformer run over these weights (Transformer::forward_with), so it
// costs one copy of the weights and one extra forward per update micro-batch, and no activations
// or gradients of its own.
//
// The copy is kept in fp32 or in bf16 (rl.kl_reference_dtype; auto = bf16 on a device backend):
// - fp32: one flat buffer the forward reads directly (on the CUDA backend the GEMMs also make
//   their bf16 compute copies of it).
// - bf16: the matrices (the layout's prefix [0, decay_size)) in bf16 and the vectors (norms,
//   biases: a few MB at 7B) in fp32, about half the bytes of fp32, and on CUDA a third of fp32
//   with its compute copies. The forward widens one layer at a time into an fp32 scratch of one
//   layer, and the embedding and then the LM head into one of the larger of them (a WeightSource,
//   weight_source.h). It loses nothing for a Hugging Face model shipped in bf16. Of fp32 weights,
//   the CUDA backend's GEMMs read bf16 copies anyway, so only the embedding rows (which its
//   embedding op reads in fp32) differ from the policy's at step 0; on the CPU, whose GEMMs read
//   fp32, every matrix's rounding shows, as a KL slightly above 0 at the first update.
//
// `source()` says where the weights came from and `hash()` fingerprints them (FNV-1a over the
// fp32 values the forward reads, in layout order); checkpoints record both, so a resumed run can
// check that it keeps the same reference. Neither making nor hashing the copy holds the whole
// model in host memory: a folder is read a tensor at a time and the hash downloads in pieces.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::model {

enum class ReferenceDtype { kF32, kBf16 };
// rl.kl_reference_dtype ("auto", "fp32" or "bf16") for a backend: auto is bf16 where the
// backend's memory is a device's, fp32 on the CPU. A model whose matrices do not all start at an
// even offset (an odd hidden size) cannot be stored as bf16 pairs of floats and stays fp32.
ReferenceDtype reference_dtype(const std::string& option, bool device_backend);
// Whether `layout`'s matrices can be stored as bf16 pairs (else a bf16 request stays fp32).
bool bf16_storable(const ParameterLayout& layout);
const char* reference_dtype_name(ReferenceDtype d);

class ReferencePolicy {
 public:
  // A copy of `model`'s current weights; `source` names them (e.g. the model folder).
  static std::unique_ptr<ReferencePolicy> copy_of(const Transformer& model, std::string source,
                                                  ReferenceDtype dtype = ReferenceDtype::kF32);
  // The weights of the model folder DIR, which must have `model`'s layout.
  static Expected<std::unique_ptr<ReferencePolicy>> load(const std::string& dir,
                                                         const Transformer& model,
                                                         ReferenceDtype dtype = ReferenceDtype::kF32);
  ~ReferencePolicy();
  ReferencePolicy(const ReferencePolicy&) = delete;
  ReferencePolicy& operator=(const ReferencePolicy&) = delete;

  // Per-token log-probabilities of `batch` under the reference, in `policy`'s convention (B*T
  // host floats). `policy` lends its code and activation buffers; its weights are not touched.
  // Not const: a bf16 reference widens into its scratch.
  Status logprobs(Transformer& policy, const TokenBatch& batch, float* out);

  const std::string& source() const { return source_; }
  const std::string& hash() const { return hash_; }  // 16 hex digits
  ReferenceDtype dtype() const { return dtype_; }
  // Floats of backend memory it holds: the copy and, in bf16, the two scratch buffers.
  size_t backend_floats() const;

 private:
  class Bf16Layers;
  ReferencePolicy(const Transformer& model, std::string source, ReferenceDtype dtype);
  size_t store_floats() const;
  // The fp32 values of [off, off + n) of the layout into dst: backend memory, or host memory when
  // to_host (in both, bf16 values widened and fp32 ones copied).
  void read(float* dst, size_t off, size_t n, bool to_host) const;
  void set_hash();

  backend::Backend* be_;
  ParameterLayout layout_;
  size_t n_;
  ReferenceDtype dtype_;
  size_t bf16_end_;  // values [0, bf16_end_) are stored in bf16 (0 for an fp32 copy)
  // [0, bf16_end_) as bf16 pairs (bf16_end_ / 2 floats), then [bf16_end_, n_) in fp32.
  float* weights_;
  std::unique_ptr<Bf16Layers> layers_;  // bf16: the scratch and the widening
  std::string source_, hash_;
};

}  // namespace leap::model
