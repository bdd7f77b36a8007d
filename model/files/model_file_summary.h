// Human- and machine-readable dumps of a parsed model file, for `workbook inspect`.
//
// Contract: the functions only read an already parsed and checked file, so they cannot fail;
// every string taken from the file is escaped (printable.h) in text and valid UTF-8 in JSON.
// Text: a one-line summary, every metadata key with its type and value (arrays longer than
// kSummaryArrayItems show their type, count and first items), the tensor table (name, type,
// ggml ne, row-major shape, bytes, offset) and totals per type. JSON: the same facts as one
// object (see docs/concepts/model-files.md, "workbook inspect").
#pragma once

#include <cstddef>
#include <string>

#include "gguf.h"
#include "safetensors.h"

namespace wb {

constexpr size_t kSummaryArrayItems = 8;

std::string DescribeGgufText(const GgufFile& file);
std::string DescribeGgufJson(const GgufFile& file);

std::string DescribeSafetensorsText(const SafetensorsCheckpoint& checkpoint);
std::string DescribeSafetensorsJson(const SafetensorsCheckpoint& checkpoint);

// One metadata value as text: 3, 1.5, "llama", true, or for arrays
// "array[u32] 4: [1, 2, 3, 4]" / "array[string] 32000: ["<unk>", "<s>", ... ]".
std::string GgufValueText(const GgufValue& value);

}  // namespace wb
