// Fuzz target: the safetensors parser, the index parser, the inspect dump and the F32/F16/BF16
// views.
//
// The same bytes are read as a .safetensors file and as the text of a
// model.safetensors.index.json. Any input must parse or fail with an error naming the file;
// a file that parses must be fully usable.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/files/model_file_summary.h"
#include "model/files/safetensors.h"
#include "model/files/tensor_view.h"

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what.c_str());
  std::abort();
}

constexpr uint64_t kMaxFloatsPerTensor = 1 << 16;

void ExerciseIndex(std::span<const std::byte> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const auto index = wb::SafetensorsCheckpoint::ParseIndex(text, "fuzz.index.json");
  if (!index.ok() && index.error().message.rfind("fuzz.index.json: ", 0) != 0) {
    Broken("index error without the file name: " + index.error().message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  ExerciseIndex(bytes);
  wb::Expected<wb::SafetensorsFile> file = wb::SafetensorsFile::Parse(bytes, "fuzz.safetensors");
  if (!file.ok()) {
    if (file.error().message.rfind("fuzz.safetensors: ", 0) != 0) {
      Broken("error without the file name: " + file.error().message);
    }
    return 0;
  }
  std::vector<wb::SafetensorsFile> files;
  files.push_back(std::move(*file));
  wb::Expected<wb::SafetensorsCheckpoint> checkpoint = wb::SafetensorsCheckpoint::FromFiles(std::move(files), "fuzz");
  if (!checkpoint.ok()) Broken("one valid file is not a valid checkpoint: " + checkpoint.error().message);
  (void)wb::DescribeSafetensorsText(*checkpoint);
  (void)wb::DescribeSafetensorsJson(*checkpoint);
  std::vector<float> out;
  const wb::SafetensorsFile& parsed = checkpoint->shards().front();
  for (const wb::SafetensorsTensorInfo& info : parsed.tensors()) {
    if (checkpoint->Find(info.name).tensor != &info) Broken("Find does not return the parsed tensor");
    wb::Expected<wb::TensorView> view = wb::ViewTensor(parsed, info);
    if (!view.ok()) {
      if (wb::WeightTypeOf(info.dtype)) Broken("a weight dtype has no view: " + view.error().message);
      continue;
    }
    const uint64_t rowLength = view->RowLength();
    if (rowLength == 0 || view->RowCount() == 0) continue;
    const uint64_t rows = std::min<uint64_t>(view->RowCount(), std::max<uint64_t>(1, kMaxFloatsPerTensor / rowLength));
    if (rows * rowLength > kMaxFloatsPerTensor) continue;
    out.resize(rows * rowLength);
    if (wb::Status s = wb::DequantizeRows(*view, 0, rows, out); !s.ok()) {
      Broken("a parsed tensor does not convert: " + s.error().message);
    }
  }
  return 0;
}
