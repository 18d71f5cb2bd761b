// See kv_cache.h.
#include "model/kv_cache.h"

#include <algorithm>
#include <array>

#include "common/check.h"

namespace leap::model {
namespace {

int blocks_for(int positions, int block_size) { return (positions + block_size - 1) / block_size; }

// The scratch's pieces before the logits, in carve order (x, ln, tmp, rstd, q, atty, k, v, gu,
// h, then qwen3's q_lin, k_lin and q/k norm rstd, empty for other models), each rounded up to
// kKvScratchAlign floats: a piece is a GEMM's output or operand, which a GPU's GEMM library wants
// aligned (cuBLASLt's vectorised kernels need 16 bytes), and with an odd row count an unrounded
// rstd (one float a row) would leave every later piece 4-byte aligned.
std::array<size_t, 13> kv_scratch_pieces(const ModelConfig& c, size_t R) {
  const size_t C = c.hidden_size, I = c.intermediate_size;
  const size_t HD = static_cast<size_t>(c.num_attention_heads) * c.head_dim;
  const size_t KD = static_cast<size_t>(c.num_key_value_heads) * c.head_dim;
  const size_t qk = c.qk_norm ? R : 0;
  std::array<size_t, 13> n = {R * C,  R * C,     R * C, R,       R * HD,  R * HD,
                              R * KD, R * KD,    R * 2 * I, R * I, qk * HD, qk * KD,
                              qk * static_cast<size_t>(c.num_attention_heads)};
  for (size_t& k : n) k = (k + kKvScratchAlign - 1) / kKvScratchAlign * kKvScratchAlign;
  return n;
}

// The block size used for sequences of up to maxT positions: the one asked for, or one block a
// sequence when none is asked (0) or it is longer than they are.
int effective_block_size(int asked, int maxT) { return asked <= 0 || asked > maxT ? maxT : asked; }

}  // namespace

size_t kv_scratch_floats(const ModelConfig& c, int rows, int logit_rows) {
  size_t total = 0;
  for (size_t n : kv_scratch_pieces(c, static_cast<size_t>(rows))) total += n;
  return total + static_cast<size_t>(c.vocab_size) * logit_rows;
}

KvScratch carve_kv_scratch(const ModelConfig& c, float* base, int rows) {
  const std::array<size_t, 13> n = kv_scratch_pieces(c, static_cast<size_t>(rows));
  KvScratch d;
  float* p = base;
  size_t i = 0;
  auto next = [&] {
    float* r = p;
    p += n[i++];
    return r;
  };
  d.x = next();
  d.ln = next();
  d.tmp = next();
  d.rstd = next();
  d.q = next();
  d.atty = next();
  d.k = next();
  d.v = next();
  d.gu = next();
  d.h = next();
  d.q_lin = next();
  d.k_lin = next();
  d.qk_rstd = next();
  d.logits = p;  // the rest: logit_rows * V
  return d;
}

uint64_t kv_cache_bytes(const ModelConfig& cfg, int slots, int maxT, int block_size, int keep,
                        backend::KvDtype dtype) {
  const int bs = std::max(1, effective_block_size(block_size, maxT));
  const uint64_t blocks = static_cast<uint64_t>(slots + keep) * blocks_for(maxT, bs) + 1;  // + sink
  const uint64_t KD = static_cast<uint64_t>(cfg.num_key_value_heads) * cfg.head_dim;
  return 2 * static_cast<uint64_t>(cfg.num_hidden_layers) * blocks * bs * KD *
             backend::kv_dtype_bytes(dtype) +
         sizeof(float) * kv_scratch_floats(cfg, slots + kKvExtendRows, slots);
}

KvCache::KvCache(const ModelConfig& cfg, backend::Backend& backend, int slots_, int maxT_,
                 int block_size_, int keep_, backend::KvDtype dtype_)
    : be(&backend),
      slots(slots_),
      maxT(maxT_),
      block_size(effective_block_size(block_size_, maxT_)),
      keep(keep_),
      blocks((slots_ + keep_) * blocks_for(maxT_, block_size)),
      L(cfg.num_hidden_layers),
      Hkv(cfg.num_key_value_heads),
      D(cfg.head_dim),
      asked_block_size(block_size_),
      dtype(dtype_),
      len(static_cast<size_t>(slots_), 0),
      cfg_(cfg),
      slot_blocks_(static_cast<size_t>(slots_)),
      holders_(static_cast<size_t>(blocks), 0) {
  LEAP_CHECK(dtype == backend::KvDtype::kF32 || Hkv * D % 2 == 0,
             "a bf16 KV cache needs an even num_key_value_heads * head_dim, not " << Hkv * D);
  allocate();
  for (int b = blocks - 1; b >= 0; --b) free_.push_back(b);
}

void KvCache::allocate() {
  k = be->alloc_floats(layer_stride() * L);
  v = be->alloc_floats(layer_stride() * L);
  scratch = be->alloc_floats(kv_scratch_floats(cfg_, slots + kKvExtendRows, slots));
}

KvCache::~KvCache() {
  be->free_floats(k);
  be->free_floats(v);
  be->free_floats(scratch);
}

void KvCache::grow(int new_slots, int new_maxT) {
  LEAP_CHECK(static_cast<int>(free_.size()) == blocks, "growing a KV cache whose blocks are in use");
  new_slots = std::max(new_slots, slots);
  new_maxT = std::max(new_maxT, maxT);
  // Against the new length: a pool first made for short sequences (a block as long as they were)
  // does not keep blocks that short once longer ones come.
  const int new_block_size = effective_block_size(asked_block_size, new_maxT);
  const int new_blocks = (new_slots + keep) * blocks_for(new_maxT, new_block_size);
  maxT = new_maxT;
  if (new_slots == slots && new_block_size == block_size && new_blocks <= blocks) return;
  // Nothing is in use, so the old pool goes before the new one comes: never both at once.
  be->free_floats(k);
  be->free_floats(v);
  be->free_floats(scratch);
  slots = new_slots;
  blocks = new_block_size == block_size ? std::max(new_blocks, blocks) : new_blocks;
  block_size = new_block_size;
  allocate();
  len.assign(static_cast<size_t>(slots), 0);
  slot_blocks_.assign(static_cast<size_t>(slots), {});
  holders_.assign(static_cast<size_t>(blocks), 0);
  free_.clear();
  for (int b = blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t KvCache::take_block() {
  const int32_t b = try_take_block();
  LEAP_CHECK(b >= 0, "the KV cache's " << blocks << " blocks are all in use");
  return b;
}

int32_t KvCache::try_take_block() {
  while (free_.empty()) {
    if (!reclaim || !reclaim()) return -1;
  }
  const int32_t b = free_.back();
  free_.pop_back();
  holders_[static_cast<size_t>(b)] = 1;
  return b;
}

void KvCache::drop_block(int32_t b) {
  int32_t& h = holders_[static_cast<size_t>(b)];
  LEAP_CHECK(h > 0, "KV block " << b << " released twice");
  if (--h == 0) free_.push_back(b);
}

void KvCache::reserve(int slot, int positions) {
  LEAP_CHECK(slot >= 0 && slot < slots && positions <= maxT,
             "slot " << slot << " of " << slots << ", " << positions << " positions of " << maxT);
  auto& mine = slot_blocks_[static_cast<size_t>(slot)];
  while (static_cast<int>(mine.size()) < blocks_for(positions, block_size))
    mine.push_back(take_block());
}

void KvCache::clear(int slot) {
  for (int32_t b : slot_blocks_[static_cast<size_t>(slot)]) drop_block(b);
  slot_blocks_[static_cast<size_t>(slot)].clear();
  len[static_cast<size_t>(slot)] = 0;
}

KvBlocks KvCache::detach(int slot) {
  KvBlocks out{std::move(slot_blocks_[static_cast<size_t>(slot)]), len[static_cast<size_t>(slot)]};
  slot_blocks_[static_cast<size_t>(slot)].clear();
  len[static_cast<size_t>(slot)] = 0;
  return out;
}

void KvCache::attach(int slot, KvBlocks&& kept, int positions) {
  LEAP_CHECK(slot_blocks_[static_cast<size_t>(slot)].empty(), "attaching to a slot in use");
  LEAP_CHECK(positions >= 0 && positions <= kept.len, positions << " of " << kept.len << " kept positions");
  const size_t need = static_cast<size_t>(blocks_for(positions, block_size));
  // The slot writes from `positions` on: into the last kept block when it is partial, which must
  // then be its own.
  LEAP_CHECK(positions % block_size == 0 || holders_[static_cast<size_t>(kept.blocks[need - 1])] == 1,
             "attaching into a KV block another sequence reads");
  for (size_t i = need; i < kept.blocks.size(); ++i) drop_block(kept.blocks[i]);
  kept.blocks.resize(need);
  slot_blocks_[static_cast<size_t>(slot)] = std::move(kept.blocks);
  len[static_cast<size_t>(slot)] = positions;
  kept = KvBlocks{};
}

void KvCache::release(KvBlocks& kept) {
  for (int32_t b : kept.blocks) drop_block(b);
  kept = KvBlocks{};
}

void KvCache::copy_slot(int from, int to, int positions) {
  LEAP_CHECK(from >= 0 && from < slots && to >= 0 && to < slots);
  if (positions < 0) positions = len[static_cast<size_t>(from)];
  LEAP_CHECK(positions <= len[static_cast<size_t>(from)],
             "copying " << positions << " positions of a slot holding " << len[from]);
  if (from == to) return;
  share_prefix(slot_blocks_[static_cast<size_t>(from)], positions, to);
}

void KvCache::share(int slot, const KvBlocks& kept, int positions) {
  LEAP_CHECK(positions <= kept.len, positions << " of " << kept.len << " kept positions");
  share_prefix(kept.blocks, positions, slot);
}

void KvCache::share_prefix(const std::vector<int32_t>& src_blocks, int positions, int slot) {
  clear(slot);
  // Copied: taking a block for the partial copy may reclaim, and a reclaim may drop the very
  // kept list `src_blocks` belongs to (its blocks survive: they are counted first, below).
  const std::vector<int32_t> src = src_blocks;
  auto& dst = slot_blocks_[static_cast<size_t>(slot)];
  const int whole = positions / block_size, rest = positions % block_size;
  // The whole blocks are counted before a partial block is taken, so a reclaim that drops the
  // source's kept list cannot free them.
  for (int i = 0; i < whole; ++i) {
    ++holders_[static_cast<size_t>(src[static_cast<size_t>(i)])];
    dst.push_back(src[static_cast<size_t>(i)]);
  }
  if (rest > 0) {
    const int32_t from_block = src[static_cast<size_t>(whole)];
    ++holders_[static_cast<size_t>(from_block)];  // held while a reclaim may run
    const int32_t b = try_take_block();
    if (b < 0) {
      // The pool is full and every kept sequence is gone, the source's too (a pool without room
      // for kept sequences, sampler.kv_keep_sequences = 0): the partial block is held by the
      // count above alone, so it becomes this slot's own, its first `rest` positions already
      // the ones wanted (the slot writes from `positions` on).
      LEAP_CHECK(holders_[static_cast<size_t>(from_block)] == 1,
                 "the KV cache's " << blocks << " blocks are all in use");
      dst.push_back(from_block);
      len[static_cast<size_t>(slot)] = positions;
      return;
    }
    dst.push_back(b);
    const size_t per_pos = pos_floats(), n = static_cast<size_t>(rest) * per_pos;
    const size_t from_at = static_cast<size_t>(from_block) * block_size * per_pos,
                 to_at = static_cast<size_t>(b) * block_size * per_pos;
    for (int l = 0; l < L; ++l) {
      be->copy(k + l * layer_stride() + to_at, k + l * layer_stride() + from_at, n);
      be->copy(v + l * layer_stride() + to_at, v + l * layer_stride() + from_at, n);
    }
    drop_block(from_block);
  }
  len[static_cast<size_t>(slot)] = positions;
}

int KvCache::tables(const int32_t* rows_slots, int n, std::vector<int32_t>* out) const {
  size_t widest = 1;
  for (int r = 0; r < n; ++r)
    widest = std::max(widest, slot_blocks_[static_cast<size_t>(rows_slots[r])].size());
  out->assign(static_cast<size_t>(n) * widest, 0);
  for (int r = 0; r < n; ++r) {
    const auto& mine = slot_blocks_[static_cast<size_t>(rows_slots[r])];
    std::copy(mine.begin(), mine.end(), out->begin() + static_cast<std::ptrdiff_t>(r * widest));
  }
  return static_cast<int>(widest);
}

}  // namespace leap::model
