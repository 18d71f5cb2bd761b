// See reference_policy.h.
#include "model/reference_policy.h"

#include <fmt/format.h>

#include <vector>

#include "common/check.h"
#include "common/fnv_hash.h"
#include "model/checkpoint.h"

namespace leap::model {

ReferencePolicy::ReferencePolicy(backend::Backend& be, size_t n, std::string source)
    : be_(&be), n_(n), weights_(be.alloc_floats(n)), source_(std::move(source)) {}

ReferencePolicy::~ReferencePolicy() {
  be_->free_floats(weights_);
}

void ReferencePolicy::set_hash(const float* host) {
  hash_ = fmt::format("{:016x}", fnv1a_floats(host, n_));
}

std::unique_ptr<ReferencePolicy> ReferencePolicy::copy_of(const Transformer& model,
                                                          std::string source) {
  std::unique_ptr<ReferencePolicy> ref(
      new ReferencePolicy(model.backend(), model.num_params(), std::move(source)));
  model.backend().copy(ref->weights_, model.params(), ref->n_);
  std::vector<float> host(ref->n_);
  model.backend().download(host.data(), ref->weights_, host.size());
  ref->set_hash(host.data());
  return ref;
}

Expected<std::unique_ptr<ReferencePolicy>> ReferencePolicy::load(const std::string& dir,
                                                                 const Transformer& model) {
  std::vector<float> host(model.num_params());
  if (Status st = read_weights(dir, model, host.data()); !st)
    return st.with_context("loading the KL reference policy (rl.kl_reference)");
  std::unique_ptr<ReferencePolicy> ref(
      new ReferencePolicy(model.backend(), model.num_params(), dir));
  model.backend().upload(ref->weights_, host.data(), host.size());
  ref->set_hash(host.data());
  return ref;
}

Status ReferencePolicy::logprobs(Transformer& policy, const TokenBatch& batch, float* out) const {
  LEAP_CHECK(policy.num_params() == n_,
             "the reference has " << n_ << " parameters, the policy " << policy.num_params());
  return policy.forward_with(weights_, batch, out);
}

}  // namespace leap::model
