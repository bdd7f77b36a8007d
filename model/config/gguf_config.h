// ModelConfig from GGUF metadata and the tensor table (ggml's docs/gguf.md; the
// `{arch}.*` keys as llama.cpp's src/llama-model.cpp reads them).
//
// Contract: ModelConfigFromGguf reads general.architecture (llama, qwen2, qwen3, qwen3moe,
// gemma3, olmoe; a llama with an expert_count is mixtral) and the `{arch}.*` keys with
// llama.cpp's reader defaults (head_count_kv = head_count, key_length = hidden / heads,
// rope.freq_base = 10000, a scaling factor without a type is linear). Switches GGUF has no
// key for are read off the tensor table:
//   no output.weight                 -> tied head
//   blk.0.attn_q.bias / attn_output.bias -> q/k/v bias / o bias
//   blk.0.attn_q_norm.weight         -> QK-norm, per head when its length is headDim, else whole
//   rope_freqs.weight                -> llama3 RoPE from the converter's per-pair divisors
//   blk.N.ffn_gate_inp.weight        -> layer N is MoE
// and the rest follow llama.cpp for the architecture: interleaved RoPE pairs for llama (the
// converter permuted q/k rows, `LlamaModel.permute`), renormalised top-k for mixtral and
// qwen3moe unless expert_weights_norm says otherwise, none for olmoe (build_moe_ffn's norm_w),
// and for gemma3 sandwich norms, GELU-tanh, √hidden embeddings, norms stored as 1 + w, an
// attention scale from gemma3.attention.scale or llama.cpp's rule (D5), sliding layers from
// gemma3.attention.sliding_window_pattern (a period or one bool per layer, true = sliding)
// or llama.cpp's period 6 (D3), and the local base rope.freq_base_swa or 10000 (D4).
// A sliding window is read for llama (written by the workbook's Mistral fixture; llama.cpp
// ignores it, D1) and gemma3; in a qwen file it is rejected. Partial rotary dimensions,
// value_length != key_length and per-layer head counts that differ are rejected. Messages
// name the file and the key or tensor. The result has passed ValidateConfig. Dn is row n of
// the transformers/llama.cpp disagreements in docs/concepts/families.md.
#pragma once

#include "model/config/config.h"
#include "model/files/gguf.h"

namespace wb::model {

Expected<ModelConfig> ModelConfigFromGguf(const GgufFile& file);

}  // namespace wb::model
