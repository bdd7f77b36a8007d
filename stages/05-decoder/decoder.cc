// Stage 5: the full decoder.
//
// Stages 1 to 4 built one decoder block of one made-up model. Here the block becomes a whole
// model, and not one model: the same code runs eight families (llama, mistral, mixtral, qwen2,
// qwen3, qwen3_moe, gemma3_text, olmoe) from a GGUF file or a Hugging Face folder. They differ
// only in the switches of ModelConfig (model/config/config.h): biases, QK-norm, RoPE pairing
// and bases, sliding windows, sandwich norms, an embedding scale, experts. Your code never
// asks which family a model is; it asks which switches it has. The keys and values go into a
// paged KV cache of f32, f16 or int8 rows, and one function, decoder_forward, is both the
// prefill of a prompt and each decode step after it.
//
// The contract is contracts/stage05_decoder.h: the model, the cache's layout and row types,
// the buffers the runner checks, the scratch, and decoder_forward. The matrix products are
// provided (contracts/stage05_kernels.h): weight_matmul, weight_matmul_same_input,
// weight_matmul_gated and weight_rows read weights of any stored type. Sizes below: n tokens in the call, H hidden, Q = heads ·
// headDim, KVW = kvHeads · headDim.
//
// The decoder is six files; this one is the stage file the runner compiles, and the runner
// builds one file per stage, so it includes the other five (below). Each part file holds
// functions declared, with their contracts, in decoder_parts.h. Fill in the TODOs in the order
// of their numbers: a number's TODO here says which part-file TODOs it needs first. Run
// `./workbook check 5` after each one: the runner makes a prefill and decode steps per case,
// over every family, and checks every buffer of every call in the order they are computed
// (embedding, then per layer norm1, q, k, v, the cache rows, attnOut, residual1, norm2,
// expertIds, expertWeights, ffnOut, output, then finalNorm and logits); fix the first thing it
// reports. It also counts the allocations of every decode step: a decode step must allocate
// nothing (no std::vector, no new): all room is in the buffers, buffers.scratch and the stack.
// The lesson is docs/stages/05-decoder.md; `./workbook hint 5` gives one more hint each time.
//
// This file is compiled as stages 3 and 4 were (data/stages.json): OpenMP's pragmas and GCC's
// vector extensions work here. Use at most `threads` threads.
#include "kv_cache.cc"
#include "rope.cc"
#include "norms.cc"
#include "attention.cc"
#include "moe.cc"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace {

// ==== Provided: plumbing, not what this stage teaches ===========================================
// [[maybe_unused]] keeps the compiler quiet until your decoder_forward calls them.

// x (rows x width) += bias in every row.
[[maybe_unused]] void AddBias(float* x, int rows, int width, const float* bias) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * width;
    for (int c = 0; c < width; ++c) row[c] += bias[c];
  }
}

// out = a + b, element by element, over `count` values: a residual add.
[[maybe_unused]] void AddRows(const float* a, const float* b, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void decoder_forward(const Model& model, KvCache& cache, std::span<const int32_t> tokens, Logits logits,
                     const DecoderBuffers& buffers, int threads) {
  // Helper functions of your own (an attention half and an FFN half per layer, say) are
  // welcome; the parts are in namespace decoder_parts. Row i of every buffer is the token at
  // position cache.size + i, cache.size as the call found it.

  // 1. TODO embedding (n x H): row i is row tokens[i] of model.weights.embedding as float
  //    (weight_rows), times sqrt(H) when config.embeddingScale is kSqrtHidden.
  //    Checkpoint embedding.

  // 2. TODO norm1. First RmsNormRows (norms.cc, TODO 2a). Then, for every layer l (of
  //    config.layerCount()), with x the layer's input (buffers.embedding for layer 0, the
  //    previous layer's output after it): buffers.layers[l].norm1 (n x H) = RmsNormRows of x
  //    with the layer's attnNorm (model.weights.layers[l]) and config.rmsEps.
  //    Read and write a layer's buffers only through buffers.layers[l]: in the runner's bench
  //    and generate modes every layer's entry points at the same buffers, so the previous
  //    layer's output is this layer's output buffer. Checkpoint norm1.

  // 3. TODO q (n x Q), k and v (n x KVW): norm1 times the transposed q, k and v matrices of
  //    the layer (weight_matmul, or weight_matmul_same_input for the three in one call), plus
  //    qBias, kBias and vBias in every row when config.qkvBias. Checkpoint v (q and k are
  //    checked after TODO 5).

  // 4. TODO the QK-norm. First QkNormalise (norms.cc, TODO 4a). Then q (config.heads heads,
  //    qNorm) and k (config.kvHeads heads, kNorm) normalised as config.qkNorm says, before
  //    RoPE.

  // 5. TODO RoPE. First RopeAngles and RotateHeads (rope.cc, TODOs 5a and 5b). Once per call,
  //    before the layers: scratch.cos and scratch.sin for the call's positions from
  //    model.rope, and scratch.localCos and scratch.localSin from model.localRope when
  //    config.hasLocalRope. Per layer: q's and k's heads rotated with config.ropePairing, by
  //    the local tables on sliding layers (config.layers[l].sliding) of a config with a local
  //    base, by the global ones otherwise. Checkpoints q and k.

  // 6. TODO the cache rows. First RowAddress and StoreRow (kv_cache.cc, TODOs 6a and 6b).
  //    Per layer, after RoPE: row i of k and of v stored as layer l's keys and values at
  //    position cache.size + i. And, as the last statement of decoder_forward, cache.size
  //    += n: the call's positions are held now (without it every call writes position 0 on).
  //    Checkpoint: the cache's rows after every call.

  // 7. TODO attnOut (n x Q). First LoadHead (kv_cache.cc, TODO 7a) and Attend (attention.cc,
  //    TODO 7b). Per layer, after the rows are stored: Attend over layer l's cache with
  //    window config.slidingWindow on sliding layers (0 on the others) and scale
  //    config.attentionScale. Checkpoint attnOut.

  // 8. TODO residual1 (n x H) = x + o, o = attnOut times the transposed o matrix (plus oBias
  //    when config.outputBias); on sandwich layers (config.blockNorms == kSandwich) o is
  //    first normalised by RmsNormRows with postAttnNorm. scratch.branch is room for o.
  //    Checkpoint residual1.

  // 9. TODO norm2, ffnOut and output (n x H each) on dense layers: norm2 = RmsNormRows of
  //    residual1 with ffnNorm; ffnOut = the gated FFN of norm2: act(norm2 . gate^T) times
  //    (norm2 . up^T) element by element (weight_matmul_gated, config.activation; room in
  //    scratch.hidden), times down^T; on sandwich layers normalised by RmsNormRows with
  //    postFfnNorm (scratch.branch is room for the FFN's output before that); output =
  //    residual1 + ffnOut. Checkpoints norm2, ffnOut and output.

  // 10. TODO the experts. First RouteTokens and MoeFfn (moe.cc, TODOs 10a and 10b). On MoE
  //     layers (config.layers[l].moe) the FFN of TODO 9 is MoeFfn of norm2, writing the
  //     layer's expertIds and expertWeights; the sandwich norm and output as in TODO 9.
  //     Checkpoints expertIds, expertWeights, ffnOut and output.

  // 11. TODO finalNorm and logits, for the rows with logits: all n (Logits::kAll) or only the
  //     last (Logits::kLast), written from row 0 of each buffer. finalNorm = RmsNormRows of
  //     the last layer's output rows with model.weights.outputNorm; logits = finalNorm times
  //     model.weights.head transposed (already the embedding when config.tiedHead), then
  //     cap * tanh(logit / cap) when cap = config.finalLogitSoftcap > 0.
  //     Checkpoints finalNorm and logits.
}
