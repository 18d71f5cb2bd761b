// Atomic checkpoint folders (checkpoint_dir.h): write into .tmp_step_N, fsync'd files, rename to step_N.
#include "io/checkpoint_dir.h"

#include "common/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <tuple>
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
    const std::string digits = name.substr(5);
    // All digits: a user's copy ("step_000042.bak") is not a checkpoint to resume or prune.
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.emplace_back(std::stoll(digits), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A step's earlier checkpoint set aside by finish_checkpoint (".old_step_N") whose replacement
// never arrived (a crash between the two renames): the only complete copy of that step.
std::vector<std::pair<int64_t, fs::path>> orphaned_old_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  const std::string old_prefix = std::string(".old_") + kPrefix;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind(old_prefix, 0) != 0) continue;
    if (fs::exists(root / name.substr(5), ec) || !fs::exists(e.path() / "state.json", ec)) continue;
    try {
      out.emplace_back(std::stoll(name.substr(old_prefix.size())), e.path());
    } catch (...) {
    }
  }
  return out;
}

// The keys of state.json its readers take a value of a given type from (train_command.cpp,
// train_rl_loop.cpp, train_sft_run.cpp): a value of another type would throw there, so it is an
// error here, naming the file and the key. Objects' own keys (dcp, kl_reference) are checked by
// their readers, which return errors.
Status check_state_types(const nlohmann::json& state, const std::string& file) {
  auto fail = [&](const std::string& key, const char* want, const nlohmann::json* value = nullptr) {
    return invalid_input(fmt::format("{}: \"{}\" must be {}, not {}: the checkpoint is damaged; resume from "
                                     "another one", file, key, want, value ? value->dump() : "missing"));
  };
  if (!state.is_object()) return invalid_input(file + ": not a JSON object: the checkpoint is damaged");
  // Step counts are read as int (a step number is one everywhere else).
  for (const char* key : {"step", "optimizer_steps"}) {
    if (!state.contains(key)) return fail(key, "an integer in [0, 2^31)");
    if (!state[key].is_number_integer() || state[key].get<int64_t>() < 0 ||
        state[key].get<int64_t>() > std::numeric_limits<int>::max())
      return fail(key, "an integer in [0, 2^31)", &state[key]);
  }
  for (const char* key : {"mode", "material_hash"})
    if (state.contains(key) && !state[key].is_string()) return fail(key, "a string", &state[key]);
  if (state.contains("cpu_s") && !state["cpu_s"].is_number()) return fail("cpu_s", "a number", &state["cpu_s"]);
  for (const char* key : {"task_sampler", "data_order"}) {
    if (!state.contains(key)) continue;
    if (!state[key].is_object()) return fail(key, "an object", &state[key]);
    for (const char* part : {"epoch", "position"})
      if (state[key].contains(part) && (!state[key][part].is_number_integer() || state[key][part].get<int64_t>() < 0))
        return fail(std::string(key) + "." + part, "an integer >= 0", &state[key][part]);
  }
  if (state.contains("kl_reference") && state["kl_reference"].is_object())
    for (const char* part : {"path", "hash", "dtype"})
      if (state["kl_reference"].contains(part) && !state["kl_reference"][part].is_string())
        return fail(std::string("kl_reference.") + part, "a string", &state["kl_reference"][part]);
  return Status::ok();
}

// What tensor shapes do not show: a checkpoint of another model with the same shapes (another
// head split, RoPE base or scaling, norm epsilon, biases) would load and compute something else.
Status same_function(const model::ModelConfig& saved, const model::ModelConfig& run, const std::string& file) {
  const std::vector<std::tuple<const char*, std::string, std::string>> keys = {
      {"model_type", saved.model_type, run.model_type},
      {"num_attention_heads", std::to_string(saved.num_attention_heads), std::to_string(run.num_attention_heads)},
      {"num_key_value_heads", std::to_string(saved.num_key_value_heads), std::to_string(run.num_key_value_heads)},
      {"head_dim", std::to_string(saved.head_dim), std::to_string(run.head_dim)},
      {"rope_theta", fmt::format("{}", saved.rope_theta), fmt::format("{}", run.rope_theta)},
      {"rope_scaling", fmt::format("{} x{}", saved.rope_scaling.type, saved.rope_scaling.factor),
       fmt::format("{} x{}", run.rope_scaling.type, run.rope_scaling.factor)},
      {"rms_norm_eps", fmt::format("{}", saved.rms_norm_eps), fmt::format("{}", run.rms_norm_eps)},
      {"tie_word_embeddings", fmt::format("{}", saved.tie_word_embeddings), fmt::format("{}", run.tie_word_embeddings)},
      {"biases", fmt::format("qkv {} o {}", saved.qkv_bias, saved.o_bias),
       fmt::format("qkv {} o {}", run.qkv_bias, run.o_bias)}};
  for (const auto& [key, a, b] : keys)
    if (a != b)
      return invalid_input(fmt::format("{}: {} is {} in the checkpoint but {} in this run's model: resume with "
                                       "the model (--model.path) the run was trained from",
                                       file, key, a, b));
  return Status::ok();
}

// DIR/state.json, and the optimizer's step count from it.
Expected<nlohmann::json> read_state(const std::string& dir, model::AdamW& optimizer) {
  auto text = read_file(dir + "/state.json");
  if (!text) return text.status();
  nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.contains("step") || !state.contains("optimizer_steps"))
    return invalid_input(dir + "/state.json: not a LEAP checkpoint state (JSON with step and optimizer_steps)");
  LEAP_RETURN_IF_ERROR(check_state_types(state, dir + "/state.json"));
  optimizer.set_steps_taken(state["optimizer_steps"].get<int>());
  return state;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return fmt::format("{}{:06d}", kPrefix, step); }

Expected<std::string> begin_checkpoint(const std::string& run_dir, int64_t step) {
  const fs::path root = fs::path(run_dir) / "checkpoints";
  const fs::path tmp = root / (".tmp_" + checkpoint_dir_name(step));
  std::error_code ec;
  // A step's only complete copy, left set aside by a crash, goes back to its name first.
  for (const auto& [n, dir] : orphaned_old_checkpoints(root)) fs::rename(dir, root / checkpoint_dir_name(n), ec);
  ec.clear();
  // A crashed attempt's unfinished folders, of this step or of any other (a schedule by the
  // clock need not checkpoint the same steps again): at 7B each is about a hundred GB.
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp_", 0) == 0 || name.rfind(".old_", 0) == 0) fs::remove_all(e.path(), ec);
  }
  ec.clear();
  // Written into, a stale folder's files (another rank count's states) would join the checkpoint.
  if (fs::exists(tmp, ec))
    return io_error("cannot remove '" + tmp.string() + "', an unfinished checkpoint of an earlier attempt: remove it "
                    "by hand");
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
  // A checkpoint of the same step from an earlier attempt goes aside first and is removed only
  // once the new one is in place, so no moment is without a complete step_N or its .old_ copy.
  const fs::path old_dir = final_dir.parent_path() / (".old_" + checkpoint_dir_name(req.step));
  std::error_code ec;
  if (fs::exists(final_dir, ec)) {
    fs::remove_all(old_dir, ec);
    fs::rename(final_dir, old_dir, ec);
    if (ec) return io_error("cannot move the earlier '" + final_dir.string() + "' aside: " + ec.message());
  }
  fs::rename(tmp, final_dir, ec);
  if (ec) return io_error("cannot rename '" + tmp + "' into place: " + ec.message());
  // On disk before any older checkpoint goes: a power loss must not find the new name missing
  // and the old ones pruned.
  sync_folder(final_dir.parent_path().string());
  fs::remove_all(old_dir, ec);
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
  // Read-only (every rank may call it): a step's copy left set aside by a crash counts where it
  // lies, and the next begin_checkpoint (rank 0's) puts it back.
  auto all = list_checkpoints(run_dir);
  for (auto& orphan : orphaned_old_checkpoints(fs::path(run_dir) / "checkpoints")) all.push_back(std::move(orphan));
  std::sort(all.begin(), all.end());
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (fs::exists(it->second / "state.json")) return it->second.string();
  }
  return not_found("no checkpoint in '" + run_dir + "/checkpoints': nothing to resume; start the run without --resume");
}

Expected<std::vector<std::string>> set_aside_newer_checkpoints(const std::string& run_dir, int64_t step) {
  std::vector<std::string> moved;
  // A later step's copy left set aside by a crash is of the abandoned branch too: the next
  // checkpoint must not bring it back.
  auto all = list_checkpoints(run_dir);
  for (auto& orphan : orphaned_old_checkpoints(fs::path(run_dir) / "checkpoints")) all.push_back(std::move(orphan));
  for (const auto& [n, dir] : all) {
    if (n <= step) continue;
    const fs::path aside = dir.parent_path() / ("abandoned_" + checkpoint_dir_name(n));
    std::error_code ec;
    fs::remove_all(aside, ec);  // an earlier abandoned branch's of the same step
    fs::rename(dir, aside, ec);
    if (ec) {
      // The ones moved so far go back: a refused resume leaves the run as it was.
      const Status undone = bring_back_set_aside(moved);
      return io_error("cannot move '" + dir.string() + "' aside: " + ec.message() +
                      (undone ? std::string() : "; and " + undone.message()));
    }
    moved.push_back(aside.string());
  }
  // On disk before the trajectory file is cut back to this step: a power loss must not bring
  // back a later step_N for `latest` to find.
  if (!moved.empty()) sync_folder((fs::path(run_dir) / "checkpoints").string());
  return moved;
}

Status bring_back_set_aside(const std::vector<std::string>& moved) {
  const std::string prefix = "abandoned_";
  for (const std::string& aside : moved) {
    const fs::path p(aside);
    const fs::path back = p.parent_path() / p.filename().string().substr(prefix.size());
    std::error_code ec;
    fs::rename(p, back, ec);
    if (ec) return io_error("cannot move '" + aside + "' back to '" + back.string() + "': " + ec.message());
  }
  if (!moved.empty()) sync_folder(fs::path(moved.front()).parent_path().string());
  return Status::ok();
}

Expected<nlohmann::json> load_checkpoint(const std::string& dir, model::Transformer& model, model::AdamW& optimizer,
                                         bool weights_of_shard_only) {
  auto cfg = model::read_model_config(dir + "/config.json");
  if (!cfg) return cfg.status();
  LEAP_RETURN_IF_ERROR(same_function(*cfg, model.config(), dir + "/config.json"));
  if (has_rank_states(dir)) {
    LEAP_RETURN_IF_ERROR(model::check_weights(dir, model));  // the export: present, of this model
    LEAP_RETURN_IF_ERROR(load_rank_states(dir, model, optimizer, weights_of_shard_only));
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
  // The fp32 masters (a model with bf16 matrices) from the checkpoint's fp32 weights, exactly.
  if (optimizer.masters())
    LEAP_RETURN_IF_ERROR(
        model::stream_weights(dir, model, [&](const model::TensorInfo& t, const float* data) {
          optimizer.upload_state(optimizer.masters(), t.offset, data, t.numel);
        }));
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
      optimizer.upload_state(base, t.offset, stage.data(), t.numel);
    }
  }
  return read_state(dir, optimizer);
}

}  // namespace leap::io
