// `workbook convert HF_FOLDER --type f16|q8_0|q4_0 -o OUT.gguf [--name NAME]`: a Hugging Face
// checkpoint (config.json, safetensors, tokenizer.json) written as a GGUF file by the
// workbook's own writer, laid out as llama.cpp's convert_hf_to_gguf.py lays it out
// (reference/fixtures/gguf_conversion.h: tensor names, q/k row order, metadata keys) with the
// tokenizer's keys (reference/fixtures/tokenizer_keys.h: SentencePiece-style BPE as "llama",
// byte-level BPE as "gpt2" with llama.cpp's name for its split). This is how the workbook's
// own model's GGUF files in data/models/ are made; any llama.cpp-compatible reader loads them.
// What the GGUF leaves out of the tokenizer (an NFC normalizer) is said on stderr.
//
// The file is written through a temporary beside OUT and renamed, so OUT is never half
// written. Exit status: 0 written; 2 a bad checkpoint or usage (the message names the file).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "model/config/config.h"
#include "model/config/model_path.h"
#include "model/files/safetensors.h"
#include "model/files/tensor_view.h"
#include "reference/fixtures/gguf_conversion.h"
#include "reference/fixtures/tokenizer_keys.h"
#include "reference/gen/gguf_writer.h"

namespace wb::cli {

namespace {

Expected<TensorType> ParseMatrixType(const std::string& name) {
  if (name == "f16") return TensorType::kF16;
  if (name == "q8_0") return TensorType::kQ8_0;
  if (name == "q4_0") return TensorType::kQ4_0;
  return BadUsage(fmt::format("--type: \"{}\" is not one of f16, q8_0, q4_0", name));
}

// Every tensor of the checkpoint as floats (f16 and bf16 widen exactly).
Expected<std::vector<ref::fixtures::NamedTensor>> ReadTensors(const std::string& folder, bool* allHalf) {
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(folder);
  if (!checkpoint) return checkpoint.error();
  std::vector<ref::fixtures::NamedTensor> tensors;
  *allHalf = true;
  for (const std::string& name : checkpoint->TensorNames()) {
    auto view = ViewTensor(*checkpoint, name);
    if (!view) return view.error();
    if (view->type != TensorType::kF16) *allHalf = false;
    auto values = DequantizeAll(*view);
    if (!values) return values.error();
    tensors.push_back({name, view->shape, std::move(values).value()});
  }
  return tensors;
}

Status Convert(const std::string& folder, TensorType type, const std::string& name, const std::string& output) {
  auto config = model::LoadModelConfig(folder);
  if (!config) return config.error();
  auto configText = model::ReadWholeFile((std::filesystem::path(folder) / "config.json").string());
  if (!configText) return configText.error();
  const auto hfConfig = nlohmann::ordered_json::parse(*configText, nullptr, false);
  if (hfConfig.is_discarded()) return BadData(fmt::format("{}/config.json: is not valid JSON", folder));
  bool allHalf = false;
  auto tensors = ReadTensors(folder, &allHalf);
  if (!tensors) return tensors.error();
  ref::fixtures::GgufConversion conversion{
      .matrixType = type,
      .name = name.empty() ? std::filesystem::path(folder).filename().string() : name,
      .roundToHalf = !allHalf,
      .writeTokenizer =
          [&folder](ref::fixtures::GgufWriter& w) {
            std::vector<std::string> notes;
            wb::Status s = ref::fixtures::WriteTokenizerKeys(folder, w, &notes);
            for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
            return s;
          },
  };
  auto bytes = ref::fixtures::ConvertToGguf(hfConfig, *config, *tensors, conversion);
  if (!bytes) return bytes.error();
  const std::string temporary = output + ".partial";
  if (Status s = ref::fixtures::WriteFileBytes(temporary, *bytes); !s.ok()) {
    std::remove(temporary.c_str());
    return s;
  }
  std::error_code ec;
  std::filesystem::rename(temporary, output, ec);
  if (ec) {
    std::remove(temporary.c_str());
    return SystemError(fmt::format("{}: cannot write: {}", output, ec.message()));
  }
  return Status::Ok();
}

}  // namespace

Command AddConvertCommand(CLI::App& app) {
  struct Options {
    std::string folder;
    std::string type = "q8_0";
    std::string output;
    std::string name;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("convert", kConvertSummary);
  c->add_option("folder", o->folder, "A Hugging Face folder: config.json, model.safetensors, tokenizer.json")->required();
  c->add_option("--type", o->type, "The matrices' type: f16, q8_0 or q4_0")->capture_default_str();
  c->add_option("-o,--output", o->output, "The GGUF file to write")->required();
  c->add_option("--name", o->name, "general.name (default: the folder's name)");
  return {c, [o]() {
            auto type = ParseMatrixType(o->type);
            if (!type) return ReportError(type.error());
            if (Status s = Convert(o->folder, *type, o->name, o->output); !s.ok()) return ReportError(s.error());
            std::error_code ec;
            fmt::print("wrote {} ({} bytes)\n", o->output, std::filesystem::file_size(o->output, ec));
            return kExitPass;
          }};
}

}  // namespace wb::cli
