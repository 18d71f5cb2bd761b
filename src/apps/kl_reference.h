// The KL reference policy of `leap train` (rl.kl_beta > 0): which weights it is, how a checkpoint
// records it, and the check that a resumed run keeps the same one. By default it is the run's
// initial weights, taken on each policy rank right after the policy is built and before a
// checkpoint is loaded over it, so a resumed run's reference is again the initial weights.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "apps/train_config.h"
#include "common/log.h"
#include "common/status.h"

namespace leap::app {

// Builds p->reference (rl.kl_reference, or a copy of the freshly built policy) and hands it to
// the replica. Nothing when kl_beta is 0.
Status add_kl_reference(const TrainConfig& c, PolicyState* p);

// {"path": ..., "hash": ..., "dtype": "fp32" | "bf16"}: what state.json records.
nlohmann::json kl_reference_json(const model::ReferencePolicy& ref);

// On resume: a checkpoint that records a reference must get the same weights again (by hash);
// invalid_input naming the checkpoint, both references and the fix otherwise. A checkpoint
// without one (trained with kl_beta = 0) accepts any; `ref` null (kl_beta = 0 now) accepts any.
Status check_kl_reference(const nlohmann::json& state, const std::string& checkpoint,
                          const model::ReferencePolicy* ref, const Logger& log);

}  // namespace leap::app
