// The packed weight file: one stage's weights as a float buffer, with a checked header.
//
// Layout (little-endian), version 1:
//   0    char[8]  magic "WBPACKED"
//   8    u32      version (1)
//   12   u32      header bytes (256): the float payload starts here
//   16   u32 x 5  shape: model, qHeads, kvHeads, headDim, ffn
//   36   u32      tensor count n (at most 16)
//   40   u64 x 16 tensor offsets in floats, the first n used, the rest 0
//   168  u64      payload length in floats
//   176  u64      generator seed
//   184  u64      FNV-1a 64 checksum of the payload bytes
//   192  zero padding to 256
//   256  float32 payload
//
// Contract: ReadPackedWeights rejects anything that is not exactly such a file: a short
// header, a wrong magic, another version, offsets that are not increasing and inside the
// payload, a payload whose length disagrees with the file size, or a checksum mismatch.
// Each error names the file and the field, and ends with `regenerateHint`. WritePackedWeights
// writes to a temporary file and renames it, so a reader never sees half a file.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "expected.h"

namespace wb {

constexpr char kPackedMagic[8] = {'W', 'B', 'P', 'A', 'C', 'K', 'E', 'D'};
constexpr uint32_t kPackedVersion = 1;
constexpr uint32_t kPackedHeaderBytes = 256;
constexpr int kPackedMaxTensors = 16;

struct PackedShape {
  uint32_t model = 0, qHeads = 0, kvHeads = 0, headDim = 0, ffn = 0;
  bool operator==(const PackedShape&) const = default;
};

struct PackedWeights {
  PackedShape shape;
  std::vector<uint64_t> offsets;  // in floats, one per tensor
  uint64_t seed = 0;
  std::vector<float> values;
};

// Parses a whole file's bytes; `path` only names the file in messages.
Expected<PackedWeights> ParsePackedWeights(const unsigned char* data, size_t size, const std::string& path,
                                           const std::string& regenerateHint);
Expected<PackedWeights> ReadPackedWeights(const std::string& path, const std::string& regenerateHint);
Status WritePackedWeights(const std::string& path, const PackedWeights& weights);

}  // namespace wb
