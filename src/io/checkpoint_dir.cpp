// Atomic checkpoint folders (checkpoint_dir.h): write into .tmp_step_N, fsync'd files, rename to step_N.
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

// DIR/state.json, and the optimizer's step count from it.
Expected<nlohmann::json> read_state(const std::string& dir, model::AdamW& optimizer) {
  auto text = read_file(dir + "/state.json");
  if (!text) return text.status();
  nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.contains("step") || !state.contains("optimizer_steps"))
    return invalid_input(dir + "/state.json: not a LEAP checkpoint state (JSON with step and optimizer_steps)");
  optimizer.set_steps_taken(state["optimizer_steps"].get<int>());
  return state;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return fmt::format("{}{:06d}", kPrefix, step); }

Expected<std::string> begin_checkpoint(const std::string& run_dir, int64_t step) {
  const fs::path tmp = fs::path(run_dir) / "checkpoints" / (".tmp_" + checkpoint_dir_name(step));
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a crashed attempt's
  fs::create_directories(tmp, ec);
  if (ec) return io_error("cannot create '" + tmp.string() + "': " + ec.message());
  LEAP_RETURN_IF_ERROR(model::begin_model_export(tmp.string()));
  return tmp.string();
}

Status write_checkpoint_part(const std::string& tmp, const model::Transformer& model, const model::AdamW& optimizer,
                             int rank, int world, const FlatRanges& ranges, uint64_t max_shard_bytes) {
  const model::ModelExport plan = model::plan_model_export(model.layout(), kCheckpointExportDType, max_shard_bytes);
  LEAP_RETURN_IF_ERROR(model::write_model_shards(tmp, model, plan, rank, world));
  return write_rank_state(tmp, rank, world, model, optimizer, ranges);
}

Status finish_checkpoint(const std::string& tmp, const CheckpointRequest& req, const model::Transformer& model,
                         const model::AdamW& optimizer) {
  const model::ModelExport plan = model::plan_model_export(model.layout(), kCheckpointExportDType, req.max_shard_bytes);
  LEAP_RETURN_IF_ERROR(model::finish_model_export(tmp, model, plan));
  LEAP_RETURN_IF_ERROR(model::copy_model_side_files(req.model_dir, tmp));
  nlohmann::json st = req.state;
  st["step"] = req.step;
  st["optimizer_steps"] = optimizer.steps_taken();
  LEAP_RETURN_IF_ERROR(write_file_atomic((fs::path(tmp) / "state.json").string(), st.dump(2)));
  const fs::path final_dir = fs::path(req.run_dir) / "checkpoints" / checkpoint_dir_name(req.step);
  std::error_code ec;
  fs::remove_all(final_dir, ec);  // a checkpoint of the same step from a crashed attempt
  fs::rename(tmp, final_dir, ec);
  if (ec) return io_error("cannot rename '" + tmp + "' into place: " + ec.message());
  auto all = list_checkpoints(req.run_dir);
  for (size_t i = 0; i + static_cast<size_t>(req.keep) < all.size(); ++i) fs::remove_all(all[i].second, ec);
  return Status::ok();
}

Status save_checkpoint(const CheckpointRequest& req, const model::Transformer& model, const model::AdamW& optimizer) {
  LEAP_CHECK(optimizer.state_floats() == model.num_params(), "a sharded optimizer's checkpoint is written by every rank");
  LEAP_ASSIGN_OR_RETURN(std::string tmp, begin_checkpoint(req.run_dir, req.step));
  LEAP_RETURN_IF_ERROR(write_checkpoint_part(tmp, model, optimizer, 0, 1, {{0, model.num_params()}}, req.max_shard_bytes));
  return finish_checkpoint(tmp, req, model, optimizer);
}

std::string describe_checkpoint(const std::string& run_dir, int64_t step) {
  const fs::path dir = fs::path(run_dir) / "checkpoints" / checkpoint_dir_name(step);
  std::error_code ec;
  uint64_t bytes = 0;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    bytes += e.file_size(ec);
    ++files;
  }
  return fmt::format("{} ({} files, {:.1f} MB)", dir.string(), files, static_cast<double>(bytes) / 1e6);
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
  if (has_rank_states(dir)) {
    LEAP_RETURN_IF_ERROR(model::check_weights(dir, model));  // the export: present, of this model
    LEAP_RETURN_IF_ERROR(load_rank_states(dir, model, optimizer));
    return read_state(dir, optimizer);
  }
  // A checkpoint from before the rank-state files: fp32 weights, and every moment in one file.
  std::string opt_path = dir + "/optimizer.safetensors";
  if (!fs::exists(opt_path))
    return invalid_input(dir + ": no optimizer-rank*-of-*.safetensors file (nor an optimizer.safetensors of an "
                               "older checkpoint): the checkpoint is incomplete; resume from an earlier one");
  LEAP_RETURN_IF_ERROR(model::load_weights(dir, model));
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
  return read_state(dir, optimizer);
}

}  // namespace leap::io
