// Runs every call of a stage-5 case in one child (decoder_call.h) and reads back what it
// wrote, however it ended.
//
// Contract: the region holds the model's path (the child opens the file itself; its view
// shows that file or folder read-only and nothing else of the tree), the tokens, each call's
// token count, the page table, and, poisoned and fenced, the arena, its copy after each
// call, the allocation counts, the scratch and every checkpoint buffer of every call and
// layer. The address-space limit is the case's plus the model's size, since the child maps
// the model. An error only when the workbook itself failed (RunInChild).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "decoder_call.h"
#include "decoder_case.h"
#include "runner/isolation/child_process.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage05 {

struct ChildRun {
  ChildOutcome outcome;
  SharedRegion region;  // kept, so checks read the buffers where the child left them
  ChildLimits limits;   // what the child ran under
  int callsReturned = 0;  // calls that returned (all of them when the child returned)

  // Buffer b as floats / int32 / bytes.
  std::span<const float> Floats(DecoderCall::Buffer b) { return region.Floats<DecoderCall>(b); }
  std::span<const int32_t> Ints(DecoderCall::Buffer b);
  std::span<const unsigned char> Bytes(DecoderCall::Buffer b) { return region.Bytes<DecoderCall>(b); }
};

// Elements per row of checkpoint buffer b, and whether it holds one slice per layer.
size_t RowWidth(const DecoderCase& data, DecoderCall::Buffer b);
bool PerLayer(DecoderCall::Buffer b);
// Where call `call`'s rows of layer `layer` start in buffer b (elements). A call's rows with
// logits start where its tokens' rows do, however many it asks for (harness_call.cc).
size_t SliceStart(const DecoderCase& data, DecoderCall::Buffer b, int call, int layer);

Expected<ChildRun> RunCallsInChild(const DecoderCase& data, int threads, const StageContext& context);

}  // namespace wb::stage05
