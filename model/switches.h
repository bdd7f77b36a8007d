// The family switches a model config and the reference recipes share.
//
// Contract: each enum here is defined once for the whole workbook. ModelConfig
// (model/config/config.h) records a model's value; the block recipe (reference/block/
// block_recipe.h) names the same types in namespace ref, so the decoder reference hands a
// config's switch to the stage-1 operators as it is, with no conversion. Only switches
// that both sides need live here; the recipe's other switches are the reference's own.
#pragma once

namespace wb::model {

// Which values of a head RoPE rotates together. A Hugging Face checkpoint is always
// half-split; a GGUF llama's q/k rows were permuted by llama.cpp's converter
// (`LlamaModel.permute` in convert_hf_to_gguf.py) so that the same rotation reads as
// adjacent pairs (`llama_model_rope_type()` in llama.cpp's src/llama-model.cpp).
enum class RopePairing {
  kHalfSplit,  // (f, f + headDim/2): HF's rotate_half, llama.cpp's NEOX
  kAdjacent,   // (2f, 2f + 1): the interleaved layout, llama.cpp's NORM
};

// The gated FFN's activation (`hidden_act` / `hidden_activation` in config.json).
enum class Activation {
  kSilu,      // x * sigmoid(x)
  kGeluTanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu_pytorch_tanh
};

}  // namespace wb::model
