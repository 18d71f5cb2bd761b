// Parallel checkpoint and export writing (checkpoint_write.h).
#include "mpi/checkpoint_write.h"

#include <cstdint>

#include "common/check.h"
#include "model/generation_config.h"
#include "mpi/agree.h"

namespace leap::mpi {

namespace {

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int size_of(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}

// Rank 0's value of `v` on every rank.
template <class T>
T from_rank0(T v, MPI_Comm comm) {
  MPI_Bcast(&v, sizeof(T), MPI_BYTE, 0, comm);
  return v;
}

}  // namespace

Status write_checkpoint(MPI_Comm policy, const io::CheckpointRequest* req, const model::Transformer& model,
                        const model::AdamW& optimizer, const ZeroPlan* plan) {
  const int rank = rank_of(policy), world = size_of(policy);
  LEAP_CHECK(rank != 0 || req, "rank 0 writes the checkpoint's request");
  auto tmp = from_root(rank == 0 ? io::begin_checkpoint(req->run_dir, req->step) : Expected<std::string>(std::string()),
                       policy);
  if (!tmp) return tmp.status();
  const uint64_t max_shard = from_rank0<uint64_t>(rank == 0 ? req->max_shard_bytes : 0, policy);
  const io::FlatRanges ranges = plan ? plan->owned() : make_zero_plan(model.layout(), rank, world).owned();
  LEAP_RETURN_IF_ERROR(
      agree(io::write_checkpoint_part(*tmp, model, optimizer, rank, world, ranges, max_shard), policy));
  // Rank 0 finishes alone (index, side files, state.json, the rename); every rank learns how it
  // went, so a failure there (a full disk) stops them all instead of leaving the others in the
  // next step's collectives while rank 0 exits.
  return agree(rank == 0 ? io::finish_checkpoint(*tmp, *req, model, optimizer) : Status::ok(), policy);
}

Status export_model(MPI_Comm policy, const ExportRequest* req, const model::Transformer& model) {
  const int rank = rank_of(policy), world = size_of(policy);
  LEAP_CHECK(rank != 0 || req, "rank 0 writes the export's request");
  // Into a staging folder beside req->dir, swapped in by rank 0 once every part is written
  // (model::begin_staged_export): a job killed during the export leaves the earlier policy whole.
  auto staging = from_root(rank == 0 ? model::begin_staged_export(req->dir) : Expected<std::string>(std::string()),
                           policy);
  if (!staging) return staging.status();
  const auto stored = from_rank0<model::DType>(rank == 0 ? req->stored : model::DType::kF32, policy);
  const uint64_t max_shard = from_rank0<uint64_t>(rank == 0 ? req->max_shard_bytes : 0, policy);
  const model::ModelExport plan = model::plan_model_export(model.layout(), stored, max_shard);
  LEAP_RETURN_IF_ERROR(agree(model::write_model_shards(*staging, model, plan, rank, world), policy));
  Status finished = Status::ok();
  if (rank == 0) {
    finished = model::finish_model_export(*staging, model, plan);
    if (finished) finished = model::copy_model_side_files(req->model_dir, *staging);
    if (finished) finished = model::install_staged_export(*staging, req->dir);
  }
  return agree(finished, policy);  // as for a checkpoint: every rank learns how rank 0's part went
}

}  // namespace leap::mpi
