// The table of supported tensor types and row sizes; see tensor_types.h.
#include <limits>

#include <fmt/format.h>

#include "quant_blocks.h"
#include "tensor_types.h"

namespace wb {

namespace {

struct TypeTraits {
  uint32_t blockElements;
  uint32_t blockBytes;
  std::string_view name;
};

// Block sizes from ggml's src/ggml-common.h (QK*, sizeof(block_*)).
TypeTraits TraitsOf(TensorType type) {
  switch (type) {
    case TensorType::kF32: return {1, 4, "F32"};
    case TensorType::kF16: return {1, 2, "F16"};
    case TensorType::kQ4_0: return {kQK4_0, sizeof(BlockQ4_0), "Q4_0"};
    case TensorType::kQ4_1: return {kQK4_1, sizeof(BlockQ4_1), "Q4_1"};
    case TensorType::kQ5_0: return {kQK5_0, sizeof(BlockQ5_0), "Q5_0"};
    case TensorType::kQ5_1: return {kQK5_1, sizeof(BlockQ5_1), "Q5_1"};
    case TensorType::kQ8_0: return {kQK8_0, sizeof(BlockQ8_0), "Q8_0"};
    case TensorType::kQ2_K: return {kQK_K, sizeof(BlockQ2_K), "Q2_K"};
    case TensorType::kQ3_K: return {kQK_K, sizeof(BlockQ3_K), "Q3_K"};
    case TensorType::kQ4_K: return {kQK_K, sizeof(BlockQ4_K), "Q4_K"};
    case TensorType::kQ5_K: return {kQK_K, sizeof(BlockQ5_K), "Q5_K"};
    case TensorType::kQ6_K: return {kQK_K, sizeof(BlockQ6_K), "Q6_K"};
    case TensorType::kIQ4_NL: return {kQK4_NL, sizeof(BlockIQ4_NL), "IQ4_NL"};
    case TensorType::kIQ4_XS: return {kQK_K, sizeof(BlockIQ4_XS), "IQ4_XS"};
    case TensorType::kBF16: return {1, 2, "BF16"};
  }
  return {1, 1, "?"};  // unreachable for a TensorType that came from LookupTensorType
}

// ggml's type names by id (`ggml_type` in ggml's include/ggml.h); "" for ids it has retired.
constexpr std::string_view kGgmlTypeNames[] = {
    "F32",     "F16",    "Q4_0",    "Q4_1",   "",       "",       "Q5_0",  "Q5_1",  "Q8_0",    "Q8_1",
    "Q2_K",    "Q3_K",   "Q4_K",    "Q5_K",   "Q6_K",   "Q8_K",   "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
    "IQ4_NL",  "IQ3_S",  "IQ2_S",   "IQ4_XS", "I8",     "I16",    "I32",   "I64",   "F64",     "IQ1_M",
    "BF16",    "",       "",        "",       "TQ1_0",  "TQ2_0",  "",      "",      "",        "MXFP4",
    "NVFP4",   "Q1_0",   "Q2_0",
};

}  // namespace

uint32_t BlockElements(TensorType type) { return TraitsOf(type).blockElements; }
uint32_t BlockBytes(TensorType type) { return TraitsOf(type).blockBytes; }
std::string_view TensorTypeName(TensorType type) { return TraitsOf(type).name; }
bool IsQuantized(TensorType type) { return BlockElements(type) > 1; }

std::string_view GgmlTypeName(uint32_t id) {
  if (id >= std::size(kGgmlTypeNames)) return "";
  return kGgmlTypeNames[id];
}

Expected<TensorType> LookupTensorType(uint32_t id) {
  for (TensorType type : kAllTensorTypes) {
    if (static_cast<uint32_t>(type) == id) return type;
  }
  const std::string_view ggmlName = GgmlTypeName(id);
  const std::string which = ggmlName.empty() ? fmt::format("type {}", id) : fmt::format("type {} ({})", id, ggmlName);
  return BadData(fmt::format("{} is not supported; the workbook reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                             "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS",
                             which));
}

Expected<uint64_t> RowBytes(TensorType type, uint64_t elements) {
  const TypeTraits traits = TraitsOf(type);
  if (elements % traits.blockElements != 0) {
    return BadData(fmt::format("{} elements of type {} are not a whole number of blocks of {}", elements,
                               traits.name, traits.blockElements));
  }
  const uint64_t blocks = elements / traits.blockElements;
  if (blocks > std::numeric_limits<uint64_t>::max() / traits.blockBytes) {
    return BadData(fmt::format("{} elements of type {} need more than 2^64 bytes", elements, traits.name));
  }
  return blocks * traits.blockBytes;
}

}  // namespace wb
