// Atomic checkpoint folders: write into .tmp_step_N, fsync'd files, rename to step_N.
#include "io/checkpoint_dir.h"

#include "common/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/fs_util.h"
#include "model/generation_config.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;

namespace leap::io {

namespace {

constexpr const char* kPrefix = "step_";

std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  fs::path root = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind(kPrefix, 0) != 0) continue;
    try {
      out.emplace_back(std::stoll(name.substr(5)), e.path());
    } catch (...) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return fmt::format("{}{:06d}", kPrefix, step); }

std::vector<MomentTensor> moment_order(const model::ParameterLayout& layout) {
  std::vector<MomentTensor> out;
  for (bool second : {false, true})
    for (const auto& t : layout.tensors()) out.push_back({&t, second});
  return out;
}

Status save_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                       model::AdamW& optimizer, const nlohmann::json& state, int keep,
                       const std::string& model_dir, uint64_t max_shard_bytes, const MomentSource& sharded_source) {
  fs::path root = fs::path(run_dir) / "checkpoints";
  fs::path final_dir = root / checkpoint_dir_name(step);
  fs::path tmp = root / (".tmp_" + checkpoint_dir_name(step));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return io_error("cannot create '" + tmp.string() + "': " + ec.message());
  LEAP_RETURN_IF_ERROR(model::save_model(tmp.string(), model, model::DType::kF32, max_shard_bytes));
  LEAP_RETURN_IF_ERROR(model::copy_model_side_files(model_dir, tmp.string()));
  // The moments tensor by tensor (m's, then v's): downloaded one at a time on a device backend,
  // gathered one at a time from the ranks' shards when the optimizer is sharded.
  const bool sharded = optimizer.state_floats() != model.num_params();
  LEAP_CHECK(!sharded || sharded_source, "a sharded optimizer's checkpoint needs its moments' source");
  const std::vector<MomentTensor> order = moment_order(model.layout());
  std::vector<model::TensorToWrite> tensors;
  for (const auto& mt : order)
    tensors.push_back({mt.tensor->name + (mt.second ? ".exp_avg_sq" : ".exp_avg"), mt.tensor->shape, nullptr});
  backend::Backend& be = model.backend();
  LEAP_RETURN_IF_ERROR(model::write_safetensors_streamed(
      (tmp / "optimizer.safetensors").string(), tensors, model::DType::kF32,
      [&](size_t i, std::vector<float>& staging) -> const float* {
        const MomentTensor& mt = order[i];
        const model::TensorInfo& t = *mt.tensor;
        if (sharded) {
          staging.resize(t.numel);
          sharded_source(mt, staging.data());
          return staging.data();
        }
        const float* base = mt.second ? optimizer.v() : optimizer.m();
        if (be.host_memory()) return base + t.offset;
        staging.resize(t.numel);
        be.download(staging.data(), base + t.offset, t.numel);
        return staging.data();
      }));
  nlohmann::json st = state;
  st["step"] = step;
  st["optimizer_steps"] = optimizer.steps_taken();
  LEAP_RETURN_IF_ERROR(write_file_atomic((tmp / "state.json").string(), st.dump(2)));
  fs::remove_all(final_dir, ec);  // a checkpoint of the same step from a crashed attempt
  fs::rename(tmp, final_dir, ec);
  if (ec) return io_error("cannot rename '" + tmp.string() + "' into place: " + ec.message());
  auto all = list_checkpoints(run_dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove_all(all[i].second, ec);
  return Status::ok();
}

Expected<std::string> latest_checkpoint(const std::string& run_dir) {
  auto all = list_checkpoints(run_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (fs::exists(it->second / "state.json")) return it->second.string();
  }
  return not_found("no checkpoint in '" + run_dir + "/checkpoints': nothing to resume; start the run without --resume");
}

Expected<nlohmann::json> load_checkpoint(const std::string& dir, model::Transformer& model, model::AdamW& optimizer) {
  auto cfg = model::read_model_config(dir + "/config.json");
  if (!cfg) return cfg.status();
  LEAP_RETURN_IF_ERROR(model::load_weights(dir, model));
  std::string opt_path = dir + "/optimizer.safetensors";
  auto opt = model::SafetensorsFile::open(opt_path);
  if (!opt) return opt.status();
  // Into the moments themselves on the CPU; on a device through one tensor's staging buffer. A
  // sharded optimizer keeps the parts of each tensor that its shard holds (compact, in order).
  const bool host = model.backend().host_memory();
  const bool sharded = optimizer.state_floats() != model.num_params();
  const auto& shard = optimizer.shard();
  std::vector<float> stage;
  for (const auto& t : model.layout().tensors()) {
    for (auto [suffix, base] : {std::pair{".exp_avg", optimizer.m()}, std::pair{".exp_avg_sq", optimizer.v()}}) {
      std::string name = t.name + suffix;
      if (!opt->contains(name))
        return invalid_input(opt_path + ": tensor '" + name + "' is missing: the checkpoint is incomplete or from another model");
      if (host && !sharded) {
        LEAP_RETURN_IF_ERROR(opt->read_f32(name, t.shape, base + t.offset));
        continue;
      }
      stage.resize(t.numel);
      LEAP_RETURN_IF_ERROR(opt->read_f32(name, t.shape, stage.data()));
      if (!sharded) {
        model.backend().upload(base + t.offset, stage.data(), t.numel);
        continue;
      }
      for (size_t k = 0; k < shard.size(); ++k) {
        const auto [off, n] = shard[k];
        const size_t lo = std::max(off, t.offset), hi = std::min(off + n, t.offset + t.numel);
        if (lo < hi)
          model.backend().upload(base + optimizer.state_offset(k) + (lo - off), stage.data() + (lo - t.offset),
                                 hi - lo);
      }
    }
  }
  auto text = read_file(dir + "/state.json");
  if (!text) return text.status();
  nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.contains("step") || !state.contains("optimizer_steps"))
    return invalid_input(dir + "/state.json: not a LEAP checkpoint state (JSON with step and optimizer_steps)");
  optimizer.set_steps_taken(state["optimizer_steps"].get<int>());
  return state;
}

}  // namespace leap::io
