// Per-rank checkpoint state files (rank_state.h): written range by range, read back into any shard.
#include "io/rank_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/check.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;

namespace leap::io {

namespace {

constexpr const char* kKinds[] = {"master@", "exp_avg@", "exp_avg_sq@"};

// Where flat float `flat` (and the `n` after it) sits in the optimizer's moments: itself when
// they are replicated, else inside the one shard range that must hold all n.
size_t moment_offset(const model::AdamW& optimizer, size_t num_params, size_t flat, size_t n) {
  if (optimizer.state_floats() == num_params) return flat;
  const auto& shard = optimizer.shard();
  auto it = std::upper_bound(shard.begin(), shard.end(), std::make_pair(flat, SIZE_MAX));
  LEAP_CHECK(it != shard.begin(), "range at " << flat << " is not in this rank's shard");
  --it;
  LEAP_CHECK(flat + n <= it->first + it->second, "range at " << flat << " crosses this rank's shard ranges");
  return optimizer.state_offset(static_cast<size_t>(it - shard.begin())) + (flat - it->first);
}

struct RankFile {
  int rank = 0, world = 0;
  fs::path path;
};

// The rank-state files of DIR, by name.
std::vector<RankFile> list_rank_files(const std::string& dir) {
  std::vector<RankFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    RankFile f;
    int used = 0;
    if (std::sscanf(name.c_str(), "optimizer-rank%5d-of-%5d.safetensors%n", &f.rank, &f.world, &used) == 2 &&
        used == static_cast<int>(name.size())) {
      f.path = e.path();
      out.push_back(f);
    }
  }
  std::sort(out.begin(), out.end(), [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
  return out;
}

struct StoredRange {
  size_t offset = 0, count = 0;
  const model::SafetensorsFile* file = nullptr;
};

}  // namespace

std::string rank_state_name(int rank, int world) {
  return fmt::format("optimizer-rank{:05d}-of-{:05d}.safetensors", rank, world);
}

bool has_rank_states(const std::string& dir) { return !list_rank_files(dir).empty(); }

Status write_rank_state(const std::string& dir, int rank, int world, const model::Transformer& model,
                        const model::AdamW& optimizer, const FlatRanges& ranges) {
  const size_t P = model.num_params();
  std::vector<model::TensorToWrite> tensors;
  std::vector<const float*> sources;  // backend memory of tensor i
  for (int kind = 0; kind < 3; ++kind) {
    for (const auto& [off, n] : ranges) {
      LEAP_CHECK(off + n <= P);
      tensors.push_back({fmt::format("{}{}", kKinds[kind], off), {static_cast<int64_t>(n)}, nullptr});
      // The masters: the model's fp32 weights, or the optimizer's (a model with bf16 matrices).
      const float* state = kind == 0   ? optimizer.masters()
                           : kind == 1 ? optimizer.m()
                                       : optimizer.v();
      sources.push_back(state ? state + moment_offset(optimizer, P, off, n) : model.params() + off);
    }
  }
  backend::Backend& be = model.backend();
  return model::write_safetensors_streamed(
      (fs::path(dir) / rank_state_name(rank, world)).string(), tensors, model::DType::kF32,
      [&](size_t i, std::vector<float>& staging) -> const float* {
        if (be.host_memory()) return sources[i];
        staging.resize(static_cast<size_t>(tensors[i].shape[0]));
        be.download(staging.data(), sources[i], staging.size());
        return staging.data();
      });
}

Status load_rank_states(const std::string& dir, model::Transformer& model, model::AdamW& optimizer,
                        bool weights_of_shard_only) {
  const std::vector<RankFile> files = list_rank_files(dir);
  if (files.empty()) return not_found(dir + ": no optimizer-rank*-of-*.safetensors files");
  const int world = files.front().world;
  for (size_t r = 0; r < files.size(); ++r)
    if (files[r].world != world || files[r].rank != static_cast<int>(r) || static_cast<int>(files.size()) != world)
      return invalid_input(fmt::format(
          "{}: the rank-state files are not one complete set (found {} file(s), the first of {} ranks; "
          "expected optimizer-rank00000-of-{:05d} to optimizer-rank{:05d}-of-{:05d}): the checkpoint is "
          "incomplete; resume from an earlier one",
          dir, files.size(), world, world, world - 1, world));
  // Every file's ranges, each with its three tensors, then a check that they tile the buffer.
  std::vector<model::SafetensorsFile> opened;
  opened.reserve(files.size());
  for (const auto& f : files) {
    auto st = model::SafetensorsFile::open(f.path.string());
    if (!st) return st.status();
    opened.push_back(std::move(*st));
  }
  std::vector<StoredRange> stored;
  for (const auto& file : opened) {
    for (const auto& [name, entry] : file.entries()) {
      if (!name.starts_with(kKinds[0])) continue;
      StoredRange s{0, 0, &file};
      try {
        s.offset = std::stoull(name.substr(std::string(kKinds[0]).size()));
      } catch (...) {
        return invalid_input(fmt::format("{}: tensor '{}' has no offset after '@'", file.path(), name));
      }
      if (entry.shape.size() != 1)
        return invalid_input(fmt::format("{}: tensor '{}' is not one-dimensional", file.path(), name));
      s.count = static_cast<size_t>(entry.shape[0]);
      for (int kind = 1; kind < 3; ++kind) {
        const std::string moment = fmt::format("{}{}", kKinds[kind], s.offset);
        if (!file.contains(moment))
          return invalid_input(fmt::format("{}: tensor '{}' is missing: the checkpoint is incomplete", file.path(), moment));
      }
      stored.push_back(s);
    }
  }
  std::sort(stored.begin(), stored.end(), [](const StoredRange& a, const StoredRange& b) { return a.offset < b.offset; });
  const size_t P = model.num_params();
  size_t covered = 0;
  for (const auto& s : stored) {
    if (s.offset != covered || s.count == 0)
      return invalid_input(fmt::format(
          "{}: the ranges of the rank-state files do not cover the {} parameters exactly once (at float {}: '{}{}'): "
          "the checkpoint is of another model, or damaged",
          dir, P, covered, kKinds[0], s.offset));
    covered += s.count;
  }
  if (covered != P)
    return invalid_input(fmt::format(
        "{}: the rank-state files hold {} parameters, the model has {}: the checkpoint is of another model "
        "(compare its config.json with the model's)",
        dir, covered, P));
  // Weights: every range, into the model (or, for a caller that all-gathers them, the parts of
  // the ranges this shard holds). Moments, and masters kept by the optimizer: the parts of the
  // ranges the shard holds, compact (every range, on a replicated optimizer).
  backend::Backend& be = model.backend();
  weights_of_shard_only =
      weights_of_shard_only && optimizer.state_floats() != P;  // not a 1-rank shard
  std::vector<float> stage;
  for (const auto& s : stored) {
    const std::vector<int64_t> shape{static_cast<int64_t>(s.count)};
    for (int kind = 0; kind < 3; ++kind) {
      const std::string name = fmt::format("{}{}", kKinds[kind], s.offset);
      float* state = kind == 0 ? optimizer.masters() : kind == 1 ? optimizer.m() : optimizer.v();
      const bool into_weights = kind == 0 && !weights_of_shard_only;
      if (!into_weights && !optimizer.holds_any(s.offset, s.count)) continue;
      stage.resize(s.count);
      LEAP_RETURN_IF_ERROR(s.file->read_f32(name, shape, stage.data()));
      if (into_weights) be.upload(model.params() + s.offset, stage.data(), s.count);
      if (kind == 0 && weights_of_shard_only)
        optimizer.upload_shard_weights(s.offset, stage.data(), s.count);
      if (state) optimizer.upload_state(state, s.offset, stage.data(), s.count);
    }
  }
  return Status::ok();
}

}  // namespace leap::io
