// Fuzz target: the GGUF parser, its typed getters, the inspect dump and dequantisation.
//
// Any input must either parse or fail with an error naming the file; nothing may crash, read
// out of bounds or hang. A file that parses must be fully usable: every getter answers, the
// dump renders, and every tensor's first rows dequantise without error.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "model/files/gguf.h"
#include "model/files/model_file_summary.h"
#include "model/files/tensor_view.h"

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_gguf: %s\n", what.c_str());
  std::abort();
}

constexpr uint64_t kMaxFloatsPerTensor = 1 << 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  wb::Expected<wb::GgufFile> file = wb::GgufFile::Parse(bytes, "fuzz.gguf");
  if (!file.ok()) {
    if (file.error().message.rfind("fuzz.gguf: ", 0) != 0) Broken("error without the file name: " + file.error().message);
    return 0;
  }
  for (const wb::GgufKeyValue& kv : file->metadata()) {
    (void)file->GetU32(kv.key);
    (void)file->GetU64(kv.key);
    (void)file->GetI64(kv.key);
    (void)file->GetF32(kv.key);
    (void)file->GetBool(kv.key);
    (void)file->GetString(kv.key);
    (void)file->GetU32Array(kv.key);
    (void)file->GetI64Array(kv.key);
    (void)file->GetF32Array(kv.key);
    (void)file->GetStringArray(kv.key);
  }
  (void)wb::DescribeGgufText(*file);
  (void)wb::DescribeGgufJson(*file);
  std::vector<float> out;
  for (const wb::GgufTensorInfo& info : file->tensors()) {
    const wb::TensorView view = wb::ViewTensor(*file, info);
    if (view.data.size() != info.byteSize) Broken("view size differs from the tensor info");
    const uint64_t rowLength = view.RowLength();
    if (rowLength == 0 || view.RowCount() == 0) continue;
    const uint64_t rows = std::min<uint64_t>(view.RowCount(), std::max<uint64_t>(1, kMaxFloatsPerTensor / rowLength));
    if (rows * rowLength > kMaxFloatsPerTensor) continue;  // one huge row: skip, it is only slow
    out.resize(rows * rowLength);
    if (wb::Status s = wb::DequantizeRows(view, view.RowCount() - rows, rows, out); !s.ok()) {
      Broken("a parsed tensor does not dequantise: " + s.error().message);
    }
  }
  return 0;
}
