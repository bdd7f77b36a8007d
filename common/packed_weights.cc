#include "packed_weights.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "fnv1a.h"

namespace wb {
namespace {

// Fixed offsets of the header fields (see the layout in the header file).
constexpr size_t kAtVersion = 8, kAtHeaderBytes = 12, kAtShape = 16, kAtCount = 36,
                 kAtOffsets = 40, kAtPayloadFloats = 168, kAtSeed = 176, kAtChecksum = 184;

template <typename T>
T Load(const unsigned char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));  // the workbook runs on little-endian machines only
  return value;
}

template <typename T>
void Store(unsigned char* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

}  // namespace

Expected<PackedWeights> ParsePackedWeights(const unsigned char* data, size_t size, const std::string& path,
                                           const std::string& hint) {
  auto fail = [&](const std::string& what) {
    return BadData(fmt::format("{}: {}. {}", path, what, hint));
  };
  const uint64_t fileBytes = size;
  if (fileBytes < kPackedHeaderBytes) {
    return fail(fmt::format("the file is {} bytes, shorter than its {}-byte header (truncated)",
                            fileBytes, kPackedHeaderBytes));
  }
  const unsigned char* header = data;
  if (std::memcmp(header, kPackedMagic, sizeof(kPackedMagic)) != 0) {
    return fail("bytes 0-7 are not the magic \"WBPACKED\": this is not a workbook weight file");
  }
  const auto version = Load<uint32_t>(header + kAtVersion);
  if (version != kPackedVersion) {
    return fail(fmt::format("field 'version' is {}, this workbook reads version {}", version, kPackedVersion));
  }
  const auto headerBytes = Load<uint32_t>(header + kAtHeaderBytes);
  if (headerBytes != kPackedHeaderBytes) {
    return fail(fmt::format("field 'header_bytes' is {}, expected {}", headerBytes, kPackedHeaderBytes));
  }
  PackedWeights w;
  w.shape.model = Load<uint32_t>(header + kAtShape);
  w.shape.qHeads = Load<uint32_t>(header + kAtShape + 4);
  w.shape.kvHeads = Load<uint32_t>(header + kAtShape + 8);
  w.shape.headDim = Load<uint32_t>(header + kAtShape + 12);
  w.shape.ffn = Load<uint32_t>(header + kAtShape + 16);
  const auto count = Load<uint32_t>(header + kAtCount);
  if (count == 0 || count > static_cast<uint32_t>(kPackedMaxTensors)) {
    return fail(fmt::format("field 'tensor_count' is {}, expected 1 to {}", count, kPackedMaxTensors));
  }
  const auto payloadFloats = Load<uint64_t>(header + kAtPayloadFloats);
  const uint64_t payloadBytes = fileBytes - kPackedHeaderBytes;
  if (payloadFloats > payloadBytes / sizeof(float) || payloadBytes != payloadFloats * sizeof(float)) {
    return fail(fmt::format("field 'payload_floats' says {} floats ({} bytes) but the file holds {} bytes after "
                            "the header ({})",
                            payloadFloats, payloadFloats * sizeof(float), payloadBytes,
                            payloadBytes < payloadFloats * sizeof(float) ? "truncated" : "trailing bytes"));
  }
  for (uint32_t i = 0; i < count; ++i) {
    const auto offset = Load<uint64_t>(header + kAtOffsets + 8 * i);
    if (offset >= payloadFloats || (i > 0 && offset <= w.offsets.back())) {
      return fail(fmt::format("field 'offsets[{}]' is {}: offsets must increase and lie inside the {}-float payload",
                              i, offset, payloadFloats));
    }
    w.offsets.push_back(offset);
  }
  w.seed = Load<uint64_t>(header + kAtSeed);
  const auto checksum = Load<uint64_t>(header + kAtChecksum);
  const uint64_t actual = Fnv1a64(data + kPackedHeaderBytes, payloadBytes);
  if (actual != checksum) {
    return fail(fmt::format("the payload's checksum is {:016x}, the header says {:016x} (corrupted)", actual,
                            checksum));
  }
  w.values.resize(payloadFloats);
  std::memcpy(w.values.data(), data + kPackedHeaderBytes, payloadBytes);
  return w;
}

Expected<PackedWeights> ReadPackedWeights(const std::string& path, const std::string& hint) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return BadData(fmt::format("{}: cannot open the packed weight file. {}", path, hint));
  const auto fileBytes = static_cast<size_t>(in.tellg());
  in.seekg(0);
  std::vector<unsigned char> bytes(fileBytes);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(fileBytes));
  if (!in) return BadData(fmt::format("{}: cannot read the packed weight file. {}", path, hint));
  return ParsePackedWeights(bytes.data(), bytes.size(), path, hint);
}

Status WritePackedWeights(const std::string& path, const PackedWeights& w) {
  if (w.offsets.empty() || w.offsets.size() > static_cast<size_t>(kPackedMaxTensors)) {
    return InternalError(fmt::format("{}: {} tensors do not fit the header", path, w.offsets.size()));
  }
  unsigned char header[kPackedHeaderBytes] = {};
  std::memcpy(header, kPackedMagic, sizeof(kPackedMagic));
  Store<uint32_t>(header + kAtVersion, kPackedVersion);
  Store<uint32_t>(header + kAtHeaderBytes, kPackedHeaderBytes);
  const uint32_t shape[5] = {w.shape.model, w.shape.qHeads, w.shape.kvHeads, w.shape.headDim, w.shape.ffn};
  for (int i = 0; i < 5; ++i) Store<uint32_t>(header + kAtShape + 4 * i, shape[i]);
  Store<uint32_t>(header + kAtCount, static_cast<uint32_t>(w.offsets.size()));
  for (size_t i = 0; i < w.offsets.size(); ++i) Store<uint64_t>(header + kAtOffsets + 8 * i, w.offsets[i]);
  Store<uint64_t>(header + kAtPayloadFloats, w.values.size());
  Store<uint64_t>(header + kAtSeed, w.seed);
  Store<uint64_t>(header + kAtChecksum, Fnv1a64(w.values.data(), w.values.size() * sizeof(float)));

  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return SystemError(fmt::format("{}: cannot create the file", temporary));
    out.write(reinterpret_cast<const char*>(header), kPackedHeaderBytes);
    out.write(reinterpret_cast<const char*>(w.values.data()),
              static_cast<std::streamsize>(w.values.size() * sizeof(float)));
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return SystemError(fmt::format("{}: cannot write the file", temporary));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return SystemError(fmt::format("{}: cannot move the finished file into place", path));
  }
  return Status::Ok();
}

}  // namespace wb
