// Hugging Face tensor names for GGUF tensor names (gguf-py's tensor_mapping.py in llama.cpp).
//
// Contract: HfNamesFor gives the names a family's safetensors checkpoint may store a GGUF
// tensor under, most likely first; an empty list means the tensor has no HF counterpart
// (rope_freqs.weight, or a stacked expert tensor: see HfExpertSlices). The one name that
// depends on the family is post_attention_layernorm: the pre-FFN norm (GGUF ffn_norm) in the
// pre-norm families, the norm after attention (GGUF post_attention_norm) in gemma3, whose
// pre-FFN norm is pre_feedforward_layernorm.
//
// HfExpertSlices gives, for expert e of a stacked GGUF tensor (blk.N.ffn_{gate,up,down}_exps
// .weight), where the HF checkpoint keeps it: one per-expert matrix (Mixtral's
// block_sparse_moe.experts.e.w1/w3/w2, the others' mlp.experts.e.{gate,up,down}_proj), or a
// row range of a transformers-v5 fused tensor (mlp.experts.gate_up_proj [E, 2·ff, H], gate
// rows first, and mlp.experts.down_proj [E, H, ff]).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/config/config.h"

namespace wb::model {

std::vector<std::string> HfNamesFor(std::string_view ggufName, Family family);

// Where expert e of a stacked tensor lives in an HF checkpoint.
struct HfExpertSlice {
  std::string name;        // the HF tensor
  bool fused = false;      // a [E, k·rows, cols] tensor rather than one [rows, cols] matrix
  int rowsPerExpertMultiple = 1;  // k: 2 for gate_up_proj, 1 otherwise
  int rowBlock = 0;        // which rows-sized block of the expert's slice: 0 gate, 1 up
};

// Candidate locations, preferred first; empty when `stackedName` is not an expert tensor.
std::vector<HfExpertSlice> HfExpertSlices(std::string_view stackedName, int expert, Family family);

// "blk.N.rest" -> N and rest; nullopt for names outside a block.
std::optional<std::pair<int, std::string>> SplitBlockName(std::string_view ggufName);

}  // namespace wb::model
