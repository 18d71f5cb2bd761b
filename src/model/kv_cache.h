// The sampler's paged KV cache. Every layer's keys and values live in one pool of fixed-size
// blocks; a sequence (a "slot", one decode row) is a list of blocks and a length, so long and
// short sequences share one pool instead of each reserving a whole context.
//
// - Blocks are counted: copy_slot() gives a group's G samples the prompt's whole blocks (one
//   copy in memory) and copies only a partial last block, so a write never lands in a block
//   another sequence reads.
// - A finished sequence's blocks can be detached and kept (the Sampler keeps them between turns,
//   so a later turn whose prompt extends the conversation is not prefilled again) and attached
//   to a slot later. Kept blocks live in what the live sequences leave free: when a reserve
//   finds the pool empty it calls `reclaim`, which drops kept sequences.
// - Keys and values are stored as fp32 or bf16 (`dtype`, sampler.kv_cache_dtype): the backend
//   rounds them when written and widens them when read; the scratch stays fp32.
// - The pool holds every slot at full length (maxT), so the live sequences alone never run out,
//   plus `keep` more full-length sequences for kept ones. grow() enlarges an unused pool (the
//   Sampler drops what it kept first); the policy sizes it for the run's context up front.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace leap::model {

// A detached sequence: its blocks and how many positions they hold.
struct KvBlocks {
  std::vector<int32_t> blocks;
  int len = 0;
};

// Rows a forward over the cache takes at once beyond the decode slots: a later turn's new
// tokens are run in chunks of the slots plus this many (kv_cache.cpp's scratch).
constexpr int kKvExtendRows = 64;

// Bytes of a cache's pool (at `dtype`) and its fp32 scratch (leap plan counts with this).
uint64_t kv_cache_bytes(const ModelConfig& cfg, int slots, int maxT, int block_size, int keep,
                        backend::KvDtype dtype);

// The scratch's activations for `rows` rows, the logits for the first `logit_rows` of them.
// Every piece starts kKvScratchAlign floats (64 bytes) after an aligned base, whatever `rows`.
constexpr size_t kKvScratchAlign = 16;
struct KvScratch {
  float *x, *ln, *rstd, *q, *k, *v, *atty, *tmp, *gu, *h, *logits;
  float *q_lin, *k_lin, *qk_rstd;  // qwen3: q_proj's and k_proj's outputs, the q/k norms' rstd
};
size_t kv_scratch_floats(const ModelConfig& cfg, int rows, int logit_rows);
KvScratch carve_kv_scratch(const ModelConfig& cfg, float* base, int rows);

class KvCache {
 public:
  // `slots` sequences of up to maxT positions and room for `keep` more; blocks of block_size
  // positions (0 or above maxT: one block a sequence, the contiguous layout).
  KvCache(const ModelConfig& cfg, backend::Backend& backend, int slots, int maxT,
          int block_size = 0, int keep = 0, backend::KvDtype dtype = backend::KvDtype::kF32);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // At least `slots` slots of maxT positions; no block may be in use (the old pool is freed
  // before the new one is allocated).
  void grow(int slots, int maxT);

  // Slot `to` (empty or not) becomes a copy of slot `from`'s first `positions` positions (all
  // len[from] when negative): its whole blocks shared, a partial last block copied.
  void copy_slot(int from, int to, int positions = -1);
  // Blocks for positions [0, positions) of the slot (reclaiming kept sequences when the pool is
  // empty). Aborts when even that leaves none: the pool's size makes it impossible.
  void reserve(int slot, int positions);
  // Lets go of the slot's blocks; len = 0.
  void clear(int slot);
  // The slot's blocks and length, handed out; the slot is left empty.
  KvBlocks detach(int slot);
  // An empty slot takes kept blocks, keeping their first `positions` positions.
  void attach(int slot, KvBlocks&& kept, int positions);
  // A slot becomes a copy of kept blocks' first `positions` positions (whole blocks shared, a
  // partial last one copied), which stay kept.
  void share(int slot, const KvBlocks& kept, int positions);
  // Lets go of kept blocks.
  void release(KvBlocks& kept);

  // Where position pos of a slot lives: its block and the offset in it.
  int32_t block_of(int slot, int pos) const {
    return slot_blocks_[static_cast<size_t>(slot)][static_cast<size_t>(pos / block_size)];
  }
  // The block tables of rows reading slots[0..n), max_blocks wide (unused entries 0); returns
  // max_blocks.
  int tables(const int32_t* slots, int n, std::vector<int32_t>* out) const;
  int free_blocks() const { return static_cast<int>(free_.size()); }
  // Each layer's pool holds `blocks` blocks and a sink block after them (id `blocks`), where a
  // padded batch's padding rows are written: one write covers a whole batch. In floats of
  // backend memory (half the elements for a bf16 cache; Hkv * D is even, as RoPE needs).
  size_t layer_stride() const { return static_cast<size_t>(blocks + 1) * block_size * pos_floats(); }
  // Floats of backend memory one position of one layer takes (its Hkv * D keys, or values).
  size_t pos_floats() const {
    return static_cast<size_t>(Hkv) * D * backend::kv_dtype_bytes(dtype) / sizeof(float);
  }
  int32_t sink_block() const { return blocks; }

  backend::Backend* be;
  int slots, maxT, block_size, keep, blocks, L, Hkv, D;
  int asked_block_size;  // as asked (0: one block a sequence), before block_size's clamp to maxT
  backend::KvDtype dtype;
  float* k = nullptr;        // (L, blocks, block_size, Hkv, D) of `dtype`, keys after RoPE
  float* v = nullptr;        // the same for the values
  std::vector<int32_t> len;  // (slots) valid positions per slot
  float* scratch = nullptr;  // activations of slots + kKvExtendRows rows (logits for slots rows)
  // Called when a reserve finds no free block: frees what it can, true when it freed anything.
  std::function<bool()> reclaim;

 private:
  void allocate();
  // dst (emptied first) = src's first `positions`: whole blocks shared, a partial one copied.
  void share_prefix(const std::vector<int32_t>& src, int positions, int slot);
  int32_t take_block();
  int32_t try_take_block();  // -1 when the pool is full and nothing can be reclaimed
  void drop_block(int32_t b);

  ModelConfig cfg_;
  std::vector<std::vector<int32_t>> slot_blocks_;  // (slots) each slot's blocks in order
  std::vector<int32_t> holders_;                   // (blocks) slots and kept lists holding it
  std::vector<int32_t> free_;                      // popped from the back (a stack)
};

}  // namespace leap::model
