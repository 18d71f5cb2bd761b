// Control flow and collectives: bra, call (to .func with by-value params, and vprintf /
// __assertfail), ret, exit, trap; bar.sync/barrier.sync/bar.red; and the warp collectives
// shfl.sync (up, down, bfly, idx), vote.sync (all, any, uni, ballot), activemask,
// bar.warp.sync, redux.sync, match.sync.
//
// Invariants: a collective's handler only parks its thread (kAtBarrier / kAtWarpOp, pc left on
// the instruction); the executor completes it once every lane that can arrive has arrived, by
// calling complete_warp_op / complete_barrier with the waiting threads in lane order, which
// read all sources before writing any destination.
#include "sandbox/ptx/collectives.h"

#include <bit>

#include "sandbox/ptx/exec_state.h"
#include "sandbox/ptx/ops.h"

namespace leap::sandbox::ptx {

namespace {

uint32_t h_bra(Exec&, uint64_t*, const Instr& in, uint32_t) {
  return in.aux;
}

uint32_t h_exit(Exec& x, uint64_t*, const Instr&, uint32_t) {
  x.threads[x.cur].status = ThreadStatus::kExited;
  return kStop;
}

uint32_t h_trap(Exec& x, uint64_t*, const Instr& in, uint32_t) {
  return x.fail(RunOutcome::kRuntimeError,
                "the kernel trapped (" + x.text_of(in) + ") in " + x.where());
}

void copy_params(Exec& x, const std::vector<ParamCopy>& copies) {
  uint8_t* base = x.local.data() + static_cast<size_t>(x.cur) * x.local_bytes;
  for (const ParamCopy& c : copies) std::memmove(base + c.to, base + c.from, c.size);
}

uint32_t h_call(Exec& x, uint64_t*, const Instr& in, uint32_t pc) {
  const CallSite& cs = x.prog->calls[in.aux];
  if (cs.extern_kind == 1) {  // vprintf: output is dropped; it returns 0 (no characters)
    uint8_t* base = x.local.data() + static_cast<size_t>(x.cur) * x.local_bytes;
    for (const ParamCopy& c : cs.results) std::memset(base + c.to, 0, c.size);
    return pc + 1;
  }
  if (cs.extern_kind == 2) {
    return x.fail(RunOutcome::kRuntimeError, "device-side assertion failed in " + x.where());
  }
  ThreadState& t = x.threads[x.cur];
  const size_t depth_cap = x.prog->max_call_depth;
  if (t.depth >= depth_cap) {
    return x.fail(RunOutcome::kRuntimeError, "call stack overflow at " + x.text_of(in));
  }
  copy_params(x, cs.args);
  const size_t at = static_cast<size_t>(x.cur) * depth_cap + t.depth;
  x.call_stack[at] = in.aux;
  x.return_pc[at] = pc + 1;
  ++t.depth;
  return cs.target_pc;
}

uint32_t h_ret(Exec& x, uint64_t*, const Instr&, uint32_t) {
  ThreadState& t = x.threads[x.cur];
  if (t.depth == 0) {
    t.status = ThreadStatus::kExited;
    return kStop;
  }
  --t.depth;
  const size_t at = static_cast<size_t>(x.cur) * x.prog->max_call_depth + t.depth;
  copy_params(x, x.prog->calls[x.call_stack[at]].results);
  return x.return_pc[at];
}

uint32_t h_park_barrier(Exec& x, uint64_t*, const Instr&, uint32_t) {
  x.threads[x.cur].status = ThreadStatus::kAtBarrier;
  return kStop;
}
uint32_t h_park_warp(Exec& x, uint64_t*, const Instr&, uint32_t) {
  x.threads[x.cur].status = ThreadStatus::kAtWarpOp;
  return kStop;
}

}  // namespace

void complete_barrier(Exec& x, const std::vector<uint32_t>& waiting) {
  // bar.red: the reduction is over every waiting thread's predicate (aux: 1 popc, 2 and, 3 or).
  uint32_t popc = 0;
  bool all = true, any = false;
  for (uint32_t t : waiting) {
    const Instr& in = x.prog->code[x.threads[t].pc];
    if ((in.aux & 0xff) == 0) continue;
    const uint64_t* r = x.regs_of(t);
    const bool p = (r[in.c] != 0) != ((in.aux >> 8) & 1);
    popc += p;
    all &= p;
    any |= p;
  }
  for (uint32_t t : waiting) {
    ThreadState& s = x.threads[t];
    const Instr& in = x.prog->code[s.pc];
    uint64_t* r = x.regs_of(t);
    switch (in.aux & 0xff) {
      case 1:
        r[in.d] = popc;
        break;
      case 2:
        r[in.d] = all;
        break;
      case 3:
        r[in.d] = any;
        break;
      default:
        break;
    }
    r[kSlotSink] = 0;
    s.status = ThreadStatus::kRunnable;
    ++s.pc;
  }
}

bool warp_op_ready(const Exec& x, const std::vector<uint32_t>& lanes, uint32_t alive) {
  const Instr& in = x.prog->code[x.threads[lanes[0]].pc];
  if (static_cast<WarpOp>(in.aux & 0xff) == WarpOp::kActiveMask) return true;
  uint32_t arrived = 0, needed = 0;
  for (uint32_t t : lanes) {
    arrived |= 1u << (t & 31);
    needed |= static_cast<uint32_t>(x.regs[static_cast<size_t>(t) * x.slots + in.v[0]]);
  }
  needed &= alive;
  return (arrived & needed) == needed;
}

void complete_warp_op(Exec& x, const std::vector<uint32_t>& lanes) {
  const Instr& in = x.prog->code[x.threads[lanes[0]].pc];
  const uint32_t warp_base = lanes[0] & ~31u;
  const auto kind = static_cast<WarpOp>(in.aux & 0xff);
  const uint32_t mode = (in.aux >> 8) & 0xff;
  uint32_t group = 0;  // lanes that arrived at this instruction
  for (uint32_t t : lanes) group |= 1u << (t & 31);
  uint64_t values[32] = {};
  bool preds[32] = {};
  // Sources first, for every lane of the warp that exists: shfl may read any of them.
  for (uint32_t l = 0; l < 32 && warp_base + l < x.block_threads; ++l) {
    const uint64_t* r = x.regs_of(warp_base + l);
    values[l] = r[in.a];
    preds[l] = (r[in.a] != 0) != (((in.aux >> 16) & 1) != 0);  // vote's `!p` source
  }
  for (uint32_t t : lanes) {
    const uint32_t lane = t & 31;
    uint64_t* r = x.regs_of(t);
    const uint32_t mask = static_cast<uint32_t>(r[in.v[0]]) & group;
    switch (kind) {
      case WarpOp::kShfl: {
        const uint32_t b = static_cast<uint32_t>(r[in.b]) & 31;
        const uint32_t c = static_cast<uint32_t>(r[in.c]);
        const uint32_t cval = c & 31, segmask = (c >> 8) & 31;
        const uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
        const uint32_t min_lane = lane & segmask;
        int64_t j = lane;
        bool ok = false;
        switch (mode) {
          case 0:
            j = static_cast<int64_t>(lane) - b;
            ok = j >= static_cast<int64_t>(max_lane);
            break;  // up
          case 1:
            j = lane + b;
            ok = j <= max_lane;
            break;  // down
          case 2:
            j = lane ^ b;
            ok = j <= max_lane;
            break;  // bfly
          default:
            j = min_lane | (b & ~segmask);
            ok = j <= max_lane;
            break;  // idx
        }
        if (!ok || warp_base + j >= x.block_threads) j = lane;
        r[in.d] = values[j];
        r[in.e] = ok;
        break;
      }
      case WarpOp::kVote: {
        uint32_t ballot = 0;
        for (uint32_t l = 0; l < 32; ++l) {
          if (((mask >> l) & 1) && preds[l]) ballot |= 1u << l;
        }
        switch (mode) {
          case 0:
            r[in.d] = ballot == mask;
            break;  // all
          case 1:
            r[in.d] = ballot != 0;
            break;  // any
          case 2:
            r[in.d] = ballot == 0 || ballot == mask;
            break;  // uni
          default:
            r[in.d] = ballot;
            break;  // ballot
        }
        break;
      }
      case WarpOp::kActiveMask:
        r[in.d] = group;
        break;
      case WarpOp::kSyncWarp:
        break;
      case WarpOp::kRedux: {
        uint64_t acc = 0;
        bool first = true;
        for (uint32_t l = 0; l < 32; ++l) {
          if (!((mask >> l) & 1)) continue;
          const uint32_t v = static_cast<uint32_t>(values[l]);
          if (first) {
            acc = v;
            first = false;
            continue;
          }
          switch (mode) {
            case 0:
              acc = static_cast<uint32_t>(acc + v);
              break;
            case 1:
              acc = std::min<uint32_t>(static_cast<uint32_t>(acc), v);
              break;
            case 2:
              acc = std::max<uint32_t>(static_cast<uint32_t>(acc), v);
              break;
            case 3:
              acc = static_cast<uint32_t>(
                  std::min(static_cast<int32_t>(acc), static_cast<int32_t>(v)));
              break;
            case 4:
              acc = static_cast<uint32_t>(
                  std::max(static_cast<int32_t>(acc), static_cast<int32_t>(v)));
              break;
            case 5:
              acc &= v;
              break;
            case 6:
              acc |= v;
              break;
            default:
              acc ^= v;
              break;
          }
        }
        r[in.d] = acc;
        break;
      }
      case WarpOp::kMatchAny: {
        uint32_t m = 0;
        for (uint32_t l = 0; l < 32; ++l) {
          if (((mask >> l) & 1) && values[l] == values[lane]) m |= 1u << l;
        }
        r[in.d] = m;
        break;
      }
      case WarpOp::kMatchAll: {
        bool same = true;
        for (uint32_t l = 0; l < 32; ++l) {
          if (((mask >> l) & 1) && values[l] != values[lane]) same = false;
        }
        r[in.d] = same ? mask : 0;
        r[in.e] = same;
        break;
      }
    }
    r[kSlotSink] = 0;
  }
  for (uint32_t t : lanes) {
    x.threads[t].status = ThreadStatus::kRunnable;
    ++x.threads[t].pc;
  }
}

bool select_control(const OpSpec& op, Selection* sel) {
  const std::string& b = op.base;
  sel->imm_type = Type::kU32;
  if (b == "bra" || b == "brx") {
    if (b == "brx") return true;  // indirect branches: not implemented
    sel->fn = &h_bra;
    sel->shape = Shape::kBranch;
    return true;
  }
  if (b == "call") {
    sel->fn = &h_call;
    sel->shape = Shape::kCall;
    return true;
  }
  if (b == "ret") {
    sel->fn = &h_ret;
    sel->shape = Shape::kNone;
    return true;
  }
  if (b == "exit") {
    sel->fn = &h_exit;
    sel->shape = Shape::kNone;
    return true;
  }
  if (b == "trap" || b == "brkpt") {
    sel->fn = &h_trap;
    sel->shape = Shape::kNone;
    return true;
  }
  if ((b == "bar" || b == "barrier") && op.has("warp")) {
    sel->fn = &h_park_warp;
    sel->shape = Shape::kVote;  // `bar.warp.sync mask`: the mask binds like vote's
    sel->aux = static_cast<uint32_t>(WarpOp::kSyncWarp);
    return true;
  }
  if (b == "bar" || b == "barrier") {
    if (op.has("arrive")) return true;  // producer/consumer barriers: not implemented
    sel->fn = &h_park_barrier;
    sel->shape = Shape::kBarrier;
    if (op.has("red")) {
      sel->aux = op.has("popc") ? 1 : op.has("and") ? 2 : op.has("or") ? 3 : 0;
      sel->shape = Shape::kAlu;  // d, a (id), [b (count),] c (pred): the decoder binds it
    }
    return true;
  }
  if (b == "shfl") {
    static const char* const kModes[] = {"up", "down", "bfly", "idx"};
    for (uint32_t i = 0; i < 4; ++i) {
      if (op.has(kModes[i])) sel->aux = static_cast<uint32_t>(WarpOp::kShfl) | (i << 8);
    }
    if (!op.has("sync")) return true;  // the pre-Volta shfl: not implemented
    sel->fn = &h_park_warp;
    sel->shape = Shape::kShfl;
    return true;
  }
  if (b == "vote") {
    static const char* const kModes[] = {"all", "any", "uni", "ballot"};
    for (uint32_t i = 0; i < 4; ++i) {
      if (op.has(kModes[i])) sel->aux = static_cast<uint32_t>(WarpOp::kVote) | (i << 8);
    }
    if (!op.has("sync")) return true;
    sel->fn = &h_park_warp;
    sel->shape = Shape::kVote;
    return true;
  }
  if (b == "activemask") {
    sel->fn = &h_park_warp;
    sel->shape = Shape::kAlu;
    sel->aux = static_cast<uint32_t>(WarpOp::kActiveMask);
    return true;
  }
  if (b == "redux" && op.has("sync")) {
    const bool sgn = op.type(0) == Type::kS32;
    uint32_t mode = 0;
    if (op.has("add"))
      mode = 0;
    else if (op.has("min"))
      mode = sgn ? 3 : 1;
    else if (op.has("max"))
      mode = sgn ? 4 : 2;
    else if (op.has("and"))
      mode = 5;
    else if (op.has("or"))
      mode = 6;
    else if (op.has("xor"))
      mode = 7;
    sel->aux = static_cast<uint32_t>(WarpOp::kRedux) | (mode << 8);
    sel->fn = type_bits(op.type(0)) == 32 ? &h_park_warp : nullptr;
    sel->shape = Shape::kVote;
    return true;
  }
  if (b == "match" && op.has("sync")) {
    sel->aux = static_cast<uint32_t>(op.has("all") ? WarpOp::kMatchAll : WarpOp::kMatchAny);
    sel->fn = type_bits(op.type(0)) == 32 ? &h_park_warp : nullptr;
    sel->shape = op.has("all") ? Shape::kShfl : Shape::kVote;
    return true;
  }
  return false;
}

bool is_warp_park(Handler h) {
  return h == &h_park_warp;
}

}  // namespace leap::sandbox::ptx
