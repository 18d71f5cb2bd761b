// Completion of block barriers and warp collectives (internal to the interpreter). Handlers park
// a thread on these instructions; the executor calls these once every thread that can arrive
// has arrived.
//
// Invariants: callers pass the waiting threads in ascending order (lane order within a warp);
// on return every passed thread is runnable again with its pc past the instruction.
#pragma once

#include <cstdint>
#include <vector>

#include "sandbox/ptx/program.h"

namespace leap::sandbox::ptx {

struct Exec;

// Instr::aux bits 0-7 of a parked warp instruction; bits 8-15 its mode; bit 16 a negated source.
enum class WarpOp : uint8_t { kShfl, kVote, kActiveMask, kSyncWarp, kRedux, kMatchAny, kMatchAll };

// Releases a block barrier (bar.sync / barrier.sync / bar.red) for `waiting` threads.
void complete_barrier(Exec& x, const std::vector<uint32_t>& waiting);
// Completes one warp collective for the lanes (block thread indices) parked at the same pc.
void complete_warp_op(Exec& x, const std::vector<uint32_t>& lanes);
// True when every live lane named in the waiting lanes' member masks has arrived (activemask is
// always ready: it reports whoever is there). `alive` has a bit per live lane of the warp.
bool warp_op_ready(const Exec& x, const std::vector<uint32_t>& lanes, uint32_t alive);
// True for the handler that parks a thread on a warp collective.
bool is_warp_park(Handler h);

}  // namespace leap::sandbox::ptx
