// Model folders: config.json + safetensors (single or sharded), HF names.
#include "model/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/check.h"
#include "common/fs_util.h"
#include "model/safetensors.h"

namespace leap::model {
namespace fs = std::filesystem;
namespace {

// Tensors HF checkpoints may carry that hold no parameters of ours.
bool is_ignorable(const std::string& name, bool tied) {
  return name.ends_with("rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
}

// tensor name -> shard file, from model.safetensors.index.json or the single file.
Expected<std::map<std::string, std::string>> weight_files(const std::string& dir) {
  const std::string index = (fs::path(dir) / "model.safetensors.index.json").string();
  std::map<std::string, std::string> out;
  if (!fs::exists(index)) {
    const std::string single = (fs::path(dir) / "model.safetensors").string();
    if (!fs::exists(single))
      return not_found(fmt::format(
          "{}: neither model.safetensors nor model.safetensors.index.json exists", dir));
    return out;  // empty map: everything in the single file
  }
  auto text = read_file(index);
  if (!text) return text.status();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return invalid_input(index + ": no 'weight_map' object");
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      return invalid_input(fmt::format("{}: weight_map['{}'] is not a file name", index, it.key()));
    out[it.key()] = (fs::path(dir) / it.value().get<std::string>()).string();
  }
  return out;
}

}  // namespace

namespace {

// Converts every tensor of `model`'s layout to fp32 at target(t) (numel floats), then calls
// done(t, data); with no target, only checks that each is there with its shape. Files are mapped (safetensors.h), so only what target() points to is process
// memory; the checks of read_weights (checkpoint.h) apply.
Status for_each_weight(const std::string& dir, const Transformer& model,
                       const std::function<float*(const TensorInfo&)>& target,
                       const std::function<void(const TensorInfo&, const float*)>& done) {
  LEAP_ASSIGN_OR_RETURN(auto map, weight_files(dir));
  const bool tied = model.config().tie_word_embeddings;
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  std::map<std::string, SafetensorsFile> open_files;
  auto file_for = [&](const std::string& path) -> Expected<const SafetensorsFile*> {
    auto it = open_files.find(path);
    if (it == open_files.end()) {
      LEAP_ASSIGN_OR_RETURN(auto f, SafetensorsFile::open(path));
      it = open_files.emplace(path, std::move(f)).first;
    }
    return &it->second;
  };
  std::set<std::string> used;
  for (const TensorInfo& t : model.layout().tensors()) {
    std::string path = single;
    if (!map.empty()) {
      auto it = map.find(t.name);
      if (it == map.end())
        return invalid_input(fmt::format("{}: tensor '{}' is missing from the weight_map",
                                         (fs::path(dir) / "model.safetensors.index.json").string(),
                                         t.name));
      path = it->second;
    }
    LEAP_ASSIGN_OR_RETURN(const SafetensorsFile* f, file_for(path));
    if (target) {
      float* out = target(t);
      LEAP_RETURN_IF_ERROR(f->read_f32(t.name, t.shape, out));
      done(t, out);
    } else if (auto e = f->entries().find(t.name); e == f->entries().end() || e->second.shape != t.shape) {
      return invalid_input(fmt::format("{}: tensor '{}' is {}, the model config.json describes needs shape {}",
                                       path, t.name, e == f->entries().end() ? std::string("missing")
                                                                             : "of shape " + shape_to_string(e->second.shape),
                                       shape_to_string(t.shape)));
    }
    used.insert(t.name);
  }
  // Tensors the config does not explain mean the config and the weights disagree.
  std::vector<std::string> files;
  if (map.empty())
    files.push_back(single);
  else
    for (const auto& [name, path] : map) files.push_back(path);
  for (const auto& path : files) {
    LEAP_ASSIGN_OR_RETURN(const SafetensorsFile* f, file_for(path));
    for (const auto& [name, entry] : f->entries()) {
      if (used.count(name) == 0 && !is_ignorable(name, tied))
        return invalid_input(
            fmt::format("{}: tensor '{}' is not part of the model config.json describes "
                        "(wrong num_hidden_layers, biases or tie_word_embeddings?)",
                        path, name));
    }
  }
  return Status::ok();
}

}  // namespace

Status check_weights(const std::string& dir, const Transformer& model) {
  return for_each_weight(dir, model, {}, {});
}

Status read_weights(const std::string& dir, const Transformer& model, float* host) {
  return for_each_weight(
      dir, model, [&](const TensorInfo& t) { return host + t.offset; },
      [](const TensorInfo&, const float*) {});
}

Status stream_weights(const std::string& dir, const Transformer& model,
                      const std::function<void(const TensorInfo&, const float*)>& take) {
  // One tensor at a time through a staging buffer of the largest tensor: no fp32 host copy of
  // the whole model (7.6 B parameters would be 30 GB per rank), on the CPU and on a GPU alike.
  size_t largest = 0;
  for (const TensorInfo& t : model.layout().tensors()) largest = std::max(largest, t.numel);
  std::vector<float> staging(largest);
  return for_each_weight(
      dir, model, [&](const TensorInfo&) { return staging.data(); }, take);
}

namespace {

// The folder an export replaces, its staging folder and where the earlier one goes aside, all in
// one parent so that the renames stay on one file system ("out/policy/" names "out/policy").
struct StagedPaths {
  fs::path dir, staging, old;
};

StagedPaths staged_paths(const std::string& dir) {
  // Through symlinks: a linked folder's target is what gets replaced, not the link.
  std::error_code ec;
  fs::path d = fs::weakly_canonical(fs::absolute(fs::path(dir)), ec);
  if (ec) d = fs::absolute(fs::path(dir)).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  const std::string name = d.filename().string();
  return {d, d.parent_path() / (".tmp_" + name), d.parent_path() / (".old_" + name)};
}

// A model folder's weight files: the single file, the shards and their index.
bool is_weight_file(const std::string& name) {
  return name == "model.safetensors" || name == "model.safetensors.index.json" ||
         (name.starts_with("model-") && name.ends_with(".safetensors"));
}

// The files an export writes, which the earlier folder's copies must not survive, and the
// temporary files of a write a killed job left (AtomicWriter's NAME.tmp.PID).
bool not_carried(const std::string& name) {
  return name == "config.json" || is_weight_file(name) || name.find(".tmp.") != std::string::npos;
}

}  // namespace

Status load_weights(const std::string& dir, Transformer& model) {
  return stream_weights(dir, model, [&](const TensorInfo& t, const float* data) {
    model.backend().upload(model.params() + t.offset, data, t.numel);
  });
}

Expected<ModelConfig> read_folder_config(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    const StagedPaths p = staged_paths(dir);
    if (fs::is_directory(p.old, ec))
      return invalid_input(fmt::format("model folder '{}' does not exist, but '{}' does: an export stopped while "
                                       "replacing it, and that is its earlier copy; rename it back to '{}'",
                                       dir, p.old.string(), p.dir.filename().string()));
  }
  return read_model_config((fs::path(dir) / "config.json").string());
}

Expected<std::unique_ptr<Transformer>> load_model(const std::string& dir, backend::Backend& backend,
                                                  GradientBuffer gradient, WeightStorage storage) {
  LEAP_ASSIGN_OR_RETURN(ModelConfig cfg, read_folder_config(dir));
  auto model = std::make_unique<Transformer>(cfg, backend, gradient, storage);
  LEAP_RETURN_IF_ERROR(load_weights(dir, *model));
  return model;
}

std::string ModelExport::shard_name(size_t k) const {
  return shards.size() == 1 ? std::string("model.safetensors")
                            : fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
}

ModelExport plan_model_export(const ParameterLayout& layout, DType stored, uint64_t max_shard_bytes) {
  // Shards of consecutive tensors, each at most max_shard_bytes of data (a larger tensor gets a
  // shard of its own), as transformers' save_pretrained(max_shard_size=...) cuts them.
  ModelExport plan;
  plan.stored = stored;
  const uint64_t width = stored == DType::kBF16 ? 2 : 4;
  const auto& all = layout.tensors();
  uint64_t filled = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const uint64_t bytes = all[i].numel * width;
    if (plan.shards.empty() || (filled > 0 && filled + bytes > max_shard_bytes)) {
      plan.shards.emplace_back();
      filled = 0;
    }
    plan.shards.back().push_back(i);
    filled += bytes;
    plan.total_bytes += bytes;
  }
  return plan;
}

Status begin_model_export(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error(fmt::format("cannot create {}: {}", dir, ec.message()));
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index, ec) && !fs::remove(index, ec))
    return io_error(fmt::format("cannot remove the earlier {}: {}", index.string(), ec.message()));
  return Status::ok();
}

namespace {

Status write_model_shard(const std::string& dir, const Transformer& model, const ModelExport& plan, size_t k) {
  // Tensor by tensor: the CPU backend's own memory, or one tensor downloaded at a time, so no
  // copy of the whole model is made to write it.
  backend::Backend& be = model.backend();
  const auto& all = model.layout().tensors();
  std::vector<TensorToWrite> tensors;
  for (size_t i : plan.shards[k]) tensors.push_back({all[i].name, all[i].shape, nullptr});
  return write_safetensors_streamed(
      (fs::path(dir) / plan.shard_name(k)).string(), tensors, plan.stored,
      [&](size_t j, std::vector<float>& staging) -> const float* {
        const TensorInfo& t = all[plan.shards[k][j]];
        if (be.host_memory()) return model.params() + t.offset;
        staging.resize(t.numel);
        be.download(staging.data(), model.params() + t.offset, t.numel);
        return staging.data();
      });
}

}  // namespace

Status write_model_shards(const std::string& dir, const Transformer& model, const ModelExport& plan, int rank,
                          int world) {
  for (size_t k = static_cast<size_t>(rank); k < plan.shards.size(); k += static_cast<size_t>(world))
    LEAP_RETURN_IF_ERROR(write_model_shard(dir, model, plan, k));
  return Status::ok();
}

Status finish_model_export(const std::string& dir, const Transformer& model, const ModelExport& plan) {
  LEAP_RETURN_IF_ERROR(write_model_config((fs::path(dir) / "config.json").string(), model.config(),
                                          plan.stored == DType::kBF16 ? "bfloat16" : "float32"));
  const size_t n = plan.shards.size();
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (n > 1) {
    const auto& all = model.layout().tensors();
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    for (size_t k = 0; k < n; ++k)
      for (size_t i : plan.shards[k]) weight_map[all[i].name] = plan.shard_name(k);
    nlohmann::ordered_json j;
    j["metadata"] = {{"total_size", plan.total_bytes}};
    j["weight_map"] = weight_map;
    LEAP_RETURN_IF_ERROR(write_file_atomic(index.string(), j.dump(2) + "\n"));
  }
  // Weight files of an earlier save in this folder that this one did not write: a stale index
  // would otherwise win over a new single file, and stale shards would sit beside new ones.
  std::error_code ec;
  std::vector<fs::path> stale;  // listed first, removed after: no removal under the iterator
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool weights = is_weight_file(name);
    bool ours = n > 1 && name == index.filename().string();
    for (size_t k = 0; k < n && !ours; ++k) ours = name == plan.shard_name(k);
    if (weights && !ours) stale.push_back(entry.path());
  }
  for (const auto& path : stale)
    if (!fs::remove(path, ec))
      return io_error(fmt::format("cannot remove the earlier weight file {}: {}", path.string(), ec.message()));
  return Status::ok();
}


Expected<std::string> begin_staged_export(const std::string& dir) {
  const StagedPaths p = staged_paths(dir);
  std::error_code ec;
  if (!fs::exists(p.dir, ec) && fs::is_directory(p.old, ec)) {
    fs::rename(p.old, p.dir, ec);
    if (ec)
      return io_error(fmt::format("cannot put back '{}', the only complete copy of '{}' (an earlier export stopped "
                                  "while replacing it): {}; rename it by hand",
                                  p.old.string(), p.dir.string(), ec.message()));
  }
  for (const fs::path& leftover : {p.staging, p.old}) {
    fs::remove_all(leftover, ec);
    if (ec)
      return io_error(fmt::format("cannot remove '{}', left by an unfinished export: {}; remove it by hand",
                                  leftover.string(), ec.message()));
  }
  if (fs::exists(p.dir, ec) && !fs::is_directory(p.dir, ec))
    return invalid_input(fmt::format("'{}' is a file, not a model folder: name a folder to write the model into",
                                     p.dir.string()));
  fs::create_directories(p.staging, ec);
  if (ec) return io_error(fmt::format("cannot create {}: {}", p.staging.string(), ec.message()));
  return p.staging.string();
}

Status install_staged_export(const std::string& staging, const std::string& dir) {
  const StagedPaths p = staged_paths(dir);
  LEAP_CHECK(fs::path(staging) == p.staging, "the staging folder is begin_staged_export's");
  std::error_code ec;
  if (fs::is_directory(p.dir, ec)) {
    std::vector<fs::path> keep;  // listed first, copied after
    for (const auto& e : fs::directory_iterator(p.dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!not_carried(name) && !fs::exists(p.staging / name)) keep.push_back(e.path());
    }
    if (ec) return io_error(fmt::format("cannot list {}: {}", p.dir.string(), ec.message()));
    for (const fs::path& from : keep) {
      const fs::path to = p.staging / from.filename();
      fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
      if (ec) {  // a file system without hard links: a plain copy
        fs::remove_all(to, ec);
        fs::copy(from, to, fs::copy_options::recursive, ec);
      }
      if (ec)
        return io_error(fmt::format("cannot carry '{}' into the new export: {}", from.string(), ec.message()));
    }
  }
  sync_folder(p.staging.string());
  if (fs::exists(p.dir, ec)) {
    fs::rename(p.dir, p.old, ec);
    if (ec) return io_error(fmt::format("cannot move the earlier '{}' aside: {}", p.dir.string(), ec.message()));
  }
  fs::rename(p.staging, p.dir, ec);
  if (ec)
    return io_error(fmt::format("cannot rename '{}' into place: {} (the earlier export is in '{}'; the next "
                                "export puts it back first)",
                                p.staging.string(), ec.message(), p.old.string()));
  // On disk before the earlier copy goes: a power loss must not find neither.
  sync_folder(p.dir.parent_path().string());
  fs::remove_all(p.old, ec);
  return Status::ok();
}

Status save_model(const std::string& dir, const Transformer& model, DType stored,
                  uint64_t max_shard_bytes) {
  const ModelExport plan = plan_model_export(model.layout(), stored, max_shard_bytes);
  LEAP_ASSIGN_OR_RETURN(std::string staging, begin_staged_export(dir));
  LEAP_RETURN_IF_ERROR(write_model_shards(staging, model, plan, 0, 1));
  LEAP_RETURN_IF_ERROR(finish_model_export(staging, model, plan));
  return install_staged_export(staging, dir);
}

}  // namespace leap::model
