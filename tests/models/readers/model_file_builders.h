// Test-only writers of small GGUF and safetensors files, built in memory.
//
// Contract: GgufBuilder writes the layout of ggml's docs/gguf.md: header, metadata entries in the
// order added, tensor infos, zero padding to the alignment, then each tensor's bytes padded
// to the alignment, with offsets as ggml computes them. It records where each field was
// written (fieldOffsets) so tests can corrupt exactly one field. Values are given as
// pre-encoded payloads (GgufPayload) so tests can also write nonsense on purpose.
// BuildSafetensors writes u64 N, the JSON header (padded with spaces to a multiple of 8) and
// the tensors' bytes back to back in the order given. Neither writer validates anything:
// they are here to make both good and bad files. These are not the fixture writers of
// reference/fixtures/; they exist so the reader tests depend on nothing but themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace wb::test {

using Bytes = std::vector<std::byte>;

// Little-endian appends.
class ByteWriter {
 public:
  template <typename T>
  ByteWriter& Put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return *this;
  }
  ByteWriter& PutBytes(std::span<const std::byte> more) {
    bytes_.insert(bytes_.end(), more.begin(), more.end());
    return *this;
  }
  ByteWriter& PutString(std::string_view text) {  // GGUF string: u64 length + bytes
    Put<uint64_t>(text.size());
    bytes_.insert(bytes_.end(), reinterpret_cast<const std::byte*>(text.data()),
                  reinterpret_cast<const std::byte*>(text.data()) + text.size());
    return *this;
  }
  ByteWriter& PadTo(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
  }
  size_t size() const { return bytes_.size(); }
  Bytes& bytes() { return bytes_; }

 private:
  Bytes bytes_;
};

// A metadata value: the u32 type written before it and the bytes after it.
struct GgufPayload {
  uint32_t type = 0;
  Bytes bytes;
};

template <typename T>
GgufPayload Scalar(uint32_t type, T value) {
  ByteWriter w;
  w.Put<T>(value);
  return {type, w.bytes()};
}
inline GgufPayload U8(uint8_t v) { return Scalar<uint8_t>(0, v); }
inline GgufPayload I8(int8_t v) { return Scalar<int8_t>(1, v); }
inline GgufPayload U16(uint16_t v) { return Scalar<uint16_t>(2, v); }
inline GgufPayload I16(int16_t v) { return Scalar<int16_t>(3, v); }
inline GgufPayload U32(uint32_t v) { return Scalar<uint32_t>(4, v); }
inline GgufPayload I32(int32_t v) { return Scalar<int32_t>(5, v); }
inline GgufPayload F32(float v) { return Scalar<float>(6, v); }
inline GgufPayload Bool(bool v) { return Scalar<uint8_t>(7, v ? 1 : 0); }
inline GgufPayload U64(uint64_t v) { return Scalar<uint64_t>(10, v); }
inline GgufPayload I64(int64_t v) { return Scalar<int64_t>(11, v); }
inline GgufPayload F64(double v) { return Scalar<double>(12, v); }
inline GgufPayload String(std::string_view text) {
  ByteWriter w;
  w.PutString(text);
  return {8, w.bytes()};
}

// An array of fixed-size elements of GGUF type `elementType`.
template <typename T>
GgufPayload Array(uint32_t elementType, const std::vector<T>& values) {
  ByteWriter w;
  w.Put<uint32_t>(elementType).Put<uint64_t>(values.size());
  for (const T& v : values) w.Put<T>(v);
  return {9, w.bytes()};
}
inline GgufPayload StringArray(const std::vector<std::string>& values) {
  ByteWriter w;
  w.Put<uint32_t>(8).Put<uint64_t>(values.size());
  for (const auto& v : values) w.PutString(v);
  return {9, w.bytes()};
}
// An array whose elements are arrays (each given as an Array/StringArray/ArrayOfArrays payload).
inline GgufPayload ArrayOfArrays(const std::vector<GgufPayload>& inner) {
  ByteWriter w;
  w.Put<uint32_t>(9).Put<uint64_t>(inner.size());
  for (const auto& a : inner) w.PutBytes(a.bytes);  // an array payload starts with its element type
  return {9, w.bytes()};
}

struct GgufTensorSpec {
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> ne;
  Bytes data;
  // When set, written instead of the offset ggml would compute.
  bool overrideOffset = false;
  uint64_t offset = 0;
};

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  GgufBuilder& Key(std::string key, GgufPayload value) {
    keys_.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  // Writes general.alignment (u32) and lays the file out with it.
  GgufBuilder& Alignment(uint32_t alignment) {
    alignment_ = alignment;
    return Key("general.alignment", U32(alignment));
  }
  GgufBuilder& Tensor(std::string name, uint32_t type, std::vector<uint64_t> ne, Bytes data) {
    tensors_.push_back({std::move(name), type, std::move(ne), std::move(data)});
    return *this;
  }
  GgufBuilder& TensorAt(std::string name, uint32_t type, std::vector<uint64_t> ne, Bytes data, uint64_t offset) {
    tensors_.push_back({std::move(name), type, std::move(ne), std::move(data), true, offset});
    return *this;
  }

  Bytes Build() {
    ByteWriter w;
    fieldOffsets.clear();
    fieldOffsets["magic"] = w.size();
    w.PutBytes(std::as_bytes(std::span("GGUF", 4)));
    fieldOffsets["version"] = w.size();
    w.Put<uint32_t>(version_);
    fieldOffsets["tensor_count"] = w.size();
    w.Put<uint64_t>(tensors_.size());
    fieldOffsets["kv_count"] = w.size();
    w.Put<uint64_t>(keys_.size());
    for (size_t i = 0; i < keys_.size(); ++i) {
      const std::string prefix = "kv" + std::to_string(i) + ".";
      fieldOffsets[prefix + "key"] = w.size();
      w.PutString(keys_[i].first);
      fieldOffsets[prefix + "type"] = w.size();
      w.Put<uint32_t>(keys_[i].second.type);
      fieldOffsets[prefix + "value"] = w.size();
      w.PutBytes(keys_[i].second.bytes);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const GgufTensorSpec& t = tensors_[i];
      const std::string prefix = "tensor" + std::to_string(i) + ".";
      fieldOffsets[prefix + "name"] = w.size();
      w.PutString(t.name);
      fieldOffsets[prefix + "n_dims"] = w.size();
      w.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (size_t d = 0; d < t.ne.size(); ++d) {
        fieldOffsets[prefix + "ne" + std::to_string(d)] = w.size();
        w.Put<uint64_t>(t.ne[d]);
      }
      fieldOffsets[prefix + "type"] = w.size();
      w.Put<uint32_t>(t.type);
      fieldOffsets[prefix + "offset"] = w.size();
      w.Put<uint64_t>(t.overrideOffset ? t.offset : offset);
      offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
    }
    if (!tensors_.empty()) w.PadTo(alignment_);
    fieldOffsets["data"] = w.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      fieldOffsets["tensor" + std::to_string(i) + ".data"] = w.size();
      w.PutBytes(tensors_[i].data);
      if (i + 1 < tensors_.size() || padLastTensor) w.PadTo(alignment_);
    }
    return w.bytes();
  }

  std::map<std::string, size_t> fieldOffsets;  // filled by Build()
  bool padLastTensor = true;                   // ggml and gguf-py pad after the last tensor too

 private:
  uint32_t version_;
  uint32_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufPayload>> keys_;
  std::vector<GgufTensorSpec> tensors_;
};

// --- safetensors -----------------------------------------------------------------------------

struct SafetensorsSpec {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  Bytes data;
};

// A file from a header text and a byte buffer, exactly as given (N = header.size()).
inline Bytes SafetensorsRaw(std::string_view header, std::span<const std::byte> buffer) {
  ByteWriter w;
  w.Put<uint64_t>(header.size());
  w.PutBytes(std::as_bytes(std::span(header.data(), header.size())));
  w.PutBytes(buffer);
  return w.bytes();
}

// A well-formed file: tensors back to back in the order given, header padded with spaces.
inline Bytes BuildSafetensors(const std::vector<SafetensorsSpec>& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  ByteWriter buffer;
  for (const auto& t : tensors) {
    const uint64_t begin = buffer.size();
    buffer.PutBytes(t.data);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, buffer.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  return SafetensorsRaw(text, buffer.bytes());
}

// --- values ------------------------------------------------------------------------------------

template <typename T>
Bytes BytesOf(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline std::span<const std::byte> View(const Bytes& bytes) { return {bytes.data(), bytes.size()}; }

}  // namespace wb::test
