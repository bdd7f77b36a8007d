// Stage 5's checkpoints: for every call of a case, in order, the embedding, then each layer's
// buffers, then the final norm and the logits, and the cache's other rows; one chain over
// the whole case, so the first failure is the first wrong operator across layers and calls.
//
// Contract: CheckDecoderCase describes each checkpoint to the checkpoint engine
// (runner/engine/checkpoint_engine.h):
//   embedding, norm1, q, k, v, attnOut, residual1, norm2, ffnOut, output, finalNorm, logits
//       against the reference's rows of the call (decoder_case.h), in float tolerance;
//   kCache, vCache  the rows the call stored, read back through the page table with the
//       contract's row rules: against the reference's keys and values as the cache stores
//       them (the chain), and against the contract's rounding of the student's own k and v
//       (the local view, exact, and deciding: a row stored any other way fails however
//       close it is);
//   experts (MoE layers) the chosen ids, exactly, and their weights;
//   cacheOtherRows  every byte of the arena outside the call's rows as the call found it.
// Names: "step{call}.embedding", "step{call}.layer{l}.q", ...; calls the child never reached
// are reported as not reached. The case checkpoint `allocations` passes when no decode step
// (every call after the first) allocated.
#pragma once

#include <vector>

#include "decoder_case.h"
#include "decoder_child.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/stages/stage_table.h"

namespace wb::stage05 {

ChainResult CheckDecoderCase(const DecoderCase& data, ChildRun& run, const StageInfo& stage, double points);

CheckpointReport CheckAllocations(const DecoderCase& data, ChildRun& run, double points);

}  // namespace wb::stage05
