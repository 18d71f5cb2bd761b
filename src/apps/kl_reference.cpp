// See kl_reference.h.
#include "apps/kl_reference.h"

#include <fmt/format.h>

namespace leap::app {

Status add_kl_reference(const TrainConfig& c, PolicyState* p) {
  if (c.rl.rl.kl_beta <= 0) return Status::ok();
  const model::ReferenceDtype dtype =
      model::reference_dtype(c.rl.rl.kl_reference_dtype, !p->model->backend().host_memory());
  if (!c.rl.rl.kl_reference.empty()) {
    LEAP_ASSIGN_OR_RETURN(p->reference,
                          model::ReferencePolicy::load(c.rl.rl.kl_reference, *p->model, dtype));
  } else {
    const std::string source =
        c.train.random_init
            ? fmt::format("random init of {}/config.json, seed {}", c.model.path, c.app.run.seed)
            : c.model.path;
    p->reference = model::ReferencePolicy::copy_of(*p->model, source, dtype);
  }
  p->replica->set_reference(p->reference.get());
  return Status::ok();
}

nlohmann::json kl_reference_json(const model::ReferencePolicy& ref) {
  return {{"path", ref.source()}, {"hash", ref.hash()}, {"dtype", model::reference_dtype_name(ref.dtype())}};
}

Status check_kl_reference(const nlohmann::json& state, const std::string& checkpoint,
                          const model::ReferencePolicy* ref, const Logger& log) {
  const nlohmann::json& saved = state.value("kl_reference", nlohmann::json());
  if (ref == nullptr || !saved.is_object()) return Status::ok();
  const std::string path = saved.value("path", std::string("?")),
                    hash = saved.value("hash", std::string("?"));
  // Checkpoints before rl.kl_reference_dtype existed record no dtype: they were fp32.
  const std::string dtype = saved.value("dtype", std::string("fp32")),
                    now = model::reference_dtype_name(ref->dtype());
  if (hash != ref->hash() && dtype != now)
    return invalid_input(fmt::format(
        "{}/state.json: the run was trained with its KL reference {} kept in {} (hash {}), but this "
        "run keeps it in {} (hash {}): resume with --rl.kl_reference_dtype {} (and, if the weights "
        "differ too, --rl.kl_reference pointing at the run's reference weights)",
        checkpoint, path, dtype, hash, now, ref->hash(), dtype));
  if (hash != ref->hash())
    return invalid_input(fmt::format(
        "{}/state.json: the run was trained with the KL reference {} (hash {}), but this run's "
        "reference is {} (hash {}): resume with --rl.kl_reference pointing at the run's reference "
        "weights (a reference copied from the starting policy also changes with "
        "optim.master_weights, since optimizer keeps the matrices in bf16: resume with the run's "
        "setting)",
        checkpoint, path, hash, ref->source(), ref->hash()));
  if (path != ref->source())
    log.info("KL reference {} has the checkpoint's weights (hash {}), recorded as {}",
             ref->source(), hash, path);
  return Status::ok();
}

}  // namespace leap::app
