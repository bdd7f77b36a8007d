// Tensor element types of model files: what the workbook can read, and how to turn it into floats.
//
// Contract:
//   - TensorType holds exactly the GGUF/ggml type ids the workbook reads (ggml's docs/gguf.md,
//     `ggml_type` in ggml's include/ggml.h). LookupTensorType() is the only way from a raw id to a
//     TensorType; it rejects every other id with a message that names the id (and the ggml
//     name where one is known).
//   - Types are stored in blocks: BlockElements() values take BlockBytes() bytes. Plain types
//     have blocks of one element. RowBytes() gives the bytes of a row of `elements` values; it
//     fails when `elements` is not a multiple of the block size or the size overflows u64.
//   - DequantizeRow() turns one row of blocks into floats, exactly as ggml's reference
//     `dequantize_row_*` does (ggml's src/ggml-quants.c), bit for bit: same operations, same
//     order, no fused multiply-add (this library is compiled with -ffp-contract=off). Every
//     product involved is exact in f32, so each value is the exact result rounded once (at
//     the final add of the types with a min: Q4_1, Q5_1, Q2_K, Q4_K, Q5_K; nowhere for the
//     others). dequantize.cc's header counts the bits of each product.
//   - Half (IEEE binary16) and bfloat16 conversions are done in software, exactly, with
//     round-to-nearest-even when narrowing; no F16C instructions are needed.
//   - The two reference quantizers write the Q8_0 and Q4_0 block layouts that ggml's
//     `quantize_row_q8_0_ref` / `quantize_row_q4_0_ref` write (round-to-nearest, one scale
//     per block of 32).
// Nothing here allocates or throws; sizes are checked and reported as wb::Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/expected.h"

namespace wb {

// The numbers are ggml's type ids, as stored in a GGUF tensor info.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};

// Every supported type, in id order; handy for tests and tables.
inline constexpr TensorType kAllTensorTypes[] = {
    TensorType::kF32,  TensorType::kF16,  TensorType::kQ4_0, TensorType::kQ4_1,   TensorType::kQ5_0,
    TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K, TensorType::kQ3_K,   TensorType::kQ4_K,
    TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kBF16,
};

// Elements per block: 1 for F32/F16/BF16, 32 for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/IQ4_NL, 256 for the
// K-quants (Q2_K ... Q6_K) and IQ4_XS.
uint32_t BlockElements(TensorType type);
// Bytes per block (ggml's src/ggml-common.h): F32 4, F16 2, BF16 2, Q4_0 18, Q4_1 20, Q5_0 22,
// Q5_1 24, Q8_0 34, Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210, IQ4_NL 18, IQ4_XS 136.
uint32_t BlockBytes(TensorType type);
// The ggml name: "F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K",
// "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "BF16".
std::string_view TensorTypeName(TensorType type);
bool IsQuantized(TensorType type);

// The ggml name of any ggml type id, supported or not ("IQ2_XXS" for 16), or "" if unknown.
std::string_view GgmlTypeName(uint32_t id);

// `id` as a TensorType, or an error such as "type 16 (IQ2_XXS) is not supported; the workbook
// reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and
// IQ4_XS". The caller prefixes file and tensor.
Expected<TensorType> LookupTensorType(uint32_t id);

// Bytes of a row of `elements` values. Errors: `elements` not a multiple of the block size,
// or a size beyond u64.
Expected<uint64_t> RowBytes(TensorType type, uint64_t elements);

// Turns src (whole blocks) into dst. src.size() must be RowBytes(type, dst.size()).
// Errors name the type and both sizes. The caller prefixes file and tensor.
Status DequantizeRow(TensorType type, std::span<const std::byte> src, std::span<float> dst);

// IEEE binary16 <-> binary32. HalfToFloat is exact for every bit pattern (NaN payloads kept);
// FloatToHalf rounds to nearest, ties to even, overflows to infinity and keeps NaN a NaN.
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);

// bfloat16 <-> binary32: the top 16 bits of a float. FloatToBf16 rounds to nearest even and
// keeps NaN a (quiet) NaN.
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);

// Reference quantizers (ggml `quantize_row_q8_0_ref`, `quantize_row_q4_0_ref` semantics):
// src.size() must be a multiple of 32 and dst.size() RowBytes(type, src.size()); every input
// must be finite. Q8_0: d = max|x|/127, q = round-half-away(x/d). Q4_0: d = (the x of largest
// magnitude)/-8, q = min(15, trunc(x/d + 8.5)).
Status QuantizeRowQ8_0(std::span<const float> src, std::span<std::byte> dst);
Status QuantizeRowQ4_0(std::span<const float> src, std::span<std::byte> dst);

}  // namespace wb
