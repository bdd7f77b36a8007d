// `workbook inspect PATH`: what a model file holds, like a good gguf-dump.
//
// PATH is a GGUF file, a Hugging Face directory (config.json + model.safetensors or an index
// and its shards), a single .safetensors file, or a directory's config.json. Prints the
// format, every metadata key with its type and value, the tensor table and totals, then the
// ModelConfig the workbook builds from the file and the switches it implies. Exit status 0,
// or 2 with "workbook: <file>: <what is wrong>" when the file is missing, truncated or
// malformed, a folder's config.json included. A file that parses but whose config the
// workbook cannot build (an unknown architecture, say) still exits 0: the dump is the
// useful answer, and the config section says what is wrong.
// With --tensor NAME (repeatable) it prints only those tensors' values instead, dequantised
// to f32 exactly as the decoder reads them, one row per line: in JSON each value is the
// shortest decimal that reads back as the same f32, and a non-finite one is the string "inf",
// "-inf" or "nan" (with its bits when it is not the default quiet NaN), as in the metadata.
// A name the file does not hold is exit 2, naming the file and the tensor.
// Without --no-config a tokenizer section follows the config (JSON: "tokenizer"): what the
// workbook's tokenizer reader makes of the GGUF's tokenizer.ggml.* keys or the folder's
// tokenizer.json (kind, pre-tokenizer, normalizers, BOS/EOS and whether encoding adds them),
// or why it cannot read one.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "model/tokenizer/tokenizer.h"
#include "model/files/gguf.h"
#include "model/files/model_file_summary.h"
#include "model/files/printable.h"
#include "model/files/safetensors.h"
#include "model/files/tensor_view.h"
// The parsed config comes from model/config/ (ModelConfig), built in the same tree; a checkout
// without it still dumps files.
#if __has_include("model/config/config.h")
#define WB_HAVE_MODEL_CONFIG 1
#include "model/config/config.h"
#else
#define WB_HAVE_MODEL_CONFIG 0
#endif

namespace wb::cli {

namespace {

namespace fsys = std::filesystem;

struct ConfigSection {
  bool available = false;  // the build has model/config
  bool ok = false;
  std::string text;        // DescribeConfig's lines, or the error
};

// --- the parsed config: model/config's LoadModelConfig and DescribeConfig -------------------
ConfigSection DescribeModelConfig(const std::string& path) {
  ConfigSection section;
#if WB_HAVE_MODEL_CONFIG
  section.available = true;
  const Expected<model::ModelConfig> config = model::LoadModelConfig(path);
  section.ok = config.ok();
  section.text = config.ok() ? model::DescribeConfig(*config) : config.error().message;
#else
  (void)path;
  section.text = "not available: this build does not include model/config";
#endif
  return section;
}

std::string ConfigText(const ConfigSection& section) {
  if (!section.available) return fmt::format("\nconfig: {}\n", section.text);
  if (!section.ok) return fmt::format("\nconfig: the workbook cannot build a model from this file:\n  {}\n", section.text);
  std::string text = section.text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return "\nconfig (what the workbook's decoder will run):\n" + text;
}

// Adds a "config" member to the dump's JSON object. The dump is our own output and valid by
// construction; should nlohmann ever throw here, the dump is returned unchanged.
std::string WithConfigJson(const std::string& json, const ConfigSection& section) {
  try {
    nlohmann::json root = nlohmann::json::parse(json);
    root["config"] = {{"available", section.available}, {"ok", section.ok}, {"text", section.text}};
    return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } catch (const nlohmann::json::exception&) {
    return json;
  }
}

bool EndsWith(const std::string& text, std::string_view suffix);

// --- the tokenizer: model/tokenizer's reader ------------------------------------------------
nlohmann::json DescribeTokenizerJson(const std::string& path) {
  std::error_code error;
  std::string target = path;
  if (fsys::path(path).filename() == "config.json") target = fsys::path(path).parent_path().string();
  if (target.empty()) target = ".";
  if (!fsys::is_directory(target, error) && !EndsWith(target, ".gguf")) {
    return {{"ok", false}, {"error", "a .safetensors file holds no tokenizer"}};
  }
  const auto opened = tokenizer::Tokenizer::Open(target);
  if (!opened.ok()) return {{"ok", false}, {"error", opened.error().message}};
  const tokenizer::Tokenizer& t = *opened;
  const auto id = [](std::optional<int32_t> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const bool spm = t.kind() == tokenizer::TokenizerKind::kSentencePiece;
  std::optional<int32_t> unk;
  for (int32_t i = 0; i < t.VocabSize() && !unk; ++i) {
    if (t.Type(i) == tokenizer::TokenType::kUnknown) unk = i;
  }
  return {{"ok", true},
          {"kind", spm ? "sentencepiece" : "byte-level-bpe"},
          {"gguf_model", spm ? "llama" : "gpt2"},
          {"pre_tokenizer", t.preTokenizer()},
          {"normalizers", t.Normalizers()},
          {"tokens", t.VocabSize()},
          {"bos", id(t.Bos())},
          {"eos", id(t.Eos())},
          {"unk", id(unk)},
          {"adds_bos", t.AddsBos()},
          {"adds_eos", t.AddsEos()},
          {"chat_template_chars", t.ChatTemplate().size()}};
}

std::string TokenizerText(const nlohmann::json& t) {
  if (!t["ok"].get<bool>()) return fmt::format("\ntokenizer: none the workbook reads: {}\n", t["error"].get<std::string>());
  const auto idText = [](const nlohmann::json& v) { return v.is_null() ? std::string("none") : v.dump(); };
  return fmt::format(
      "\ntokenizer (what the workbook's tokenizer reads):\n  {} (GGUF \"{}\"), {} tokens, pre-tokenizer {}, "
      "normalizers {}\n  BOS {} ({}), EOS {} ({}), unknown {}, chat template {} characters\n",
      t["kind"].get<std::string>(), t["gguf_model"].get<std::string>(), t["tokens"].get<int32_t>(),
      t["pre_tokenizer"].get<std::string>().empty() ? "none" : t["pre_tokenizer"].get<std::string>(),
      t["normalizers"].get<std::string>().empty() ? "none" : t["normalizers"].get<std::string>(), idText(t["bos"]),
      t["adds_bos"].get<bool>() ? "added" : "not added", idText(t["eos"]),
      t["adds_eos"].get<bool>() ? "added" : "not added", idText(t["unk"]), t["chat_template_chars"].get<size_t>());
}

std::string WithTokenizerJson(const std::string& json, const nlohmann::json& tokenizerSection) {
  try {
    nlohmann::json root = nlohmann::json::parse(json);
    root["tokenizer"] = tokenizerSection;
    return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } catch (const nlohmann::json::exception&) {
    return json;
  }
}

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Dump {
  std::string text;
  std::string json;
};

// A Hugging Face folder's config.json must at least be JSON: a cut or corrupted one is bad
// data, like a cut weight file. (A valid config the workbook cannot build is not.)
Status CheckConfigIsJson(const std::string& folder) {
  const fsys::path config = fsys::path(folder) / "config.json";
  std::error_code error;
  if (!fsys::exists(config, error)) return Status::Ok();
  // A stream's getline, not istreambuf_iterator: a read error (a folder named config.json,
  // EIO) then sets badbit instead of escaping as an exception.
  std::ifstream in(config, std::ios::binary);
  std::string text;
  for (std::string line; std::getline(in, line);) text += line + "\n";
  if (in.bad() || !fsys::is_regular_file(config, error)) {
    return BadData(fmt::format("{}: cannot read the file", config.string()));
  }
  if (!nlohmann::json::accept(text)) {
    return BadData(fmt::format("{}: not valid JSON (cut short or corrupted)", config.string()));
  }
  return Status::Ok();
}

// Parses PATH by what it looks like; an error message names the file.
Expected<Dump> DumpModelFile(const std::string& path) {
  std::error_code error;
  std::string safetensorsDir;
  if (fsys::is_directory(path, error)) {
    safetensorsDir = path;
  } else if (fsys::path(path).filename() == "config.json") {
    safetensorsDir = fsys::path(path).parent_path().string();
    if (safetensorsDir.empty()) safetensorsDir = ".";
  }
  if (!safetensorsDir.empty()) {
    if (Status config = CheckConfigIsJson(safetensorsDir); !config.ok()) return config.error();
    Expected<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::OpenDirectory(safetensorsDir);
    if (!checkpoint.ok()) return checkpoint.error();
    return Dump{DescribeSafetensorsText(*checkpoint), DescribeSafetensorsJson(*checkpoint)};
  }
  if (EndsWith(path, ".safetensors")) {
    Expected<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::OpenFile(path);
    if (!checkpoint.ok()) return checkpoint.error();
    return Dump{DescribeSafetensorsText(*checkpoint), DescribeSafetensorsJson(*checkpoint)};
  }
  // Anything else is read as GGUF; a file that is not one fails on its magic.
  Expected<GgufFile> gguf = GgufFile::Open(path);
  if (!gguf.ok()) return gguf.error();
  return Dump{DescribeGgufText(*gguf), DescribeGgufJson(*gguf)};
}

// A value as JSON text: shortest round-trip decimal, or a string for inf and NaN.
std::string ValueJson(float value) {
  if (!std::isfinite(value)) return fmt::format("\"{}\"", NonFiniteName(value, /*isF32=*/true));
  return fmt::format("{}", value);
}

// The tensors' values, from whichever reader opens PATH.
Expected<std::string> DumpTensorValues(const std::string& path, const std::vector<std::string>& names, bool json) {
  std::error_code error;
  const bool huggingFace = fsys::is_directory(path, error) || fsys::path(path).filename() == "config.json";
  std::optional<SafetensorsCheckpoint> checkpoint;
  std::optional<GgufFile> gguf;
  if (huggingFace || EndsWith(path, ".safetensors")) {
    const std::string folder = fsys::is_directory(path, error) ? path : fsys::path(path).parent_path().string();
    Expected<SafetensorsCheckpoint> opened = huggingFace ? SafetensorsCheckpoint::OpenDirectory(folder.empty() ? "." : folder)
                                                         : SafetensorsCheckpoint::OpenFile(path);
    if (!opened.ok()) return opened.error();
    checkpoint.emplace(std::move(opened).value());
  } else {
    Expected<GgufFile> opened = GgufFile::Open(path);
    if (!opened.ok()) return opened.error();
    gguf.emplace(std::move(opened).value());
  }
  std::string text, items;
  for (const std::string& name : names) {
    Expected<TensorView> view = gguf ? ViewTensor(*gguf, name) : ViewTensor(*checkpoint, name);
    if (!view.ok()) return view.error();
    Expected<std::vector<float>> values = DequantizeAll(*view);
    if (!values.ok()) return values.error();
    const uint64_t length = view->RowLength();
    std::vector<std::string> rows;
    for (uint64_t first = 0; first < values->size(); first += length) {
      std::vector<std::string> cells;
      for (uint64_t i = first; i < first + length; ++i) {
        cells.push_back(json ? ValueJson((*values)[i]) : fmt::format("{}", (*values)[i]));
      }
      const std::string row = fmt::format("{}", fmt::join(cells, json ? ", " : " "));
      rows.push_back(json ? "[" + row + "]" : row);
    }
    const std::string type(TensorTypeName(view->type));
    if (json) {
      if (!items.empty()) items += ",\n";
      items += fmt::format("    {{\"name\": {}, \"type\": \"{}\", \"shape\": {}, \"values\": [\n      {}\n    ]}}",
                           nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), type,
                           ShapeText(view->shape), fmt::join(rows, ",\n      "));
    } else {
      text += fmt::format("tensor {}  {}  shape {}  ({} values as f32, one row a line)\n{}\n", Printable(name), type,
                          ShapeText(view->shape), values->size(), fmt::join(rows, "\n"));
    }
  }
  if (!json) return text;
  return fmt::format("{{\n  \"file\": {},\n  \"tensors\": [\n{}\n  ]\n}}\n",
                     nlohmann::json(path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), items);
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  struct Options {
    std::string path;
    std::string format = "text";
    std::string output;
    bool noConfig = false;
    std::vector<std::string> tensors;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("inspect", kInspectSummary);
  c->add_option("path", o->path, "A .gguf file, a Hugging Face directory, or a .safetensors file")->required();
  c->add_option("--format", o->format, "Output format: text or json")->check(CLI::IsMember({"text", "json"}));
  c->add_option("--output", o->output, "Write to FILE instead of stdout");
  c->add_flag("--no-config", o->noConfig, "Only dump the file; do not build the model config");
  c->add_option("--tensor", o->tensors, "Print this tensor's values (as f32) instead; may be repeated");
  return {c, [o]() {
            if (!o->tensors.empty()) {
              Expected<std::string> values = DumpTensorValues(o->path, o->tensors, o->format == "json");
              if (!values.ok()) return ReportError(values.error());
              if (!Emit(*values, o->output)) return ReportUsageError(fmt::format("{}: cannot write the output", o->output));
              return wb::kExitPass;
            }
            Expected<Dump> dump = DumpModelFile(o->path);
            if (!dump.ok()) return ReportError(dump.error());
            std::string text;
            if (o->noConfig) {
              text = o->format == "json" ? dump->json : dump->text;
            } else {
              const ConfigSection config = DescribeModelConfig(o->path);
              const nlohmann::json tokenizerSection = DescribeTokenizerJson(o->path);
              text = o->format == "json" ? WithTokenizerJson(WithConfigJson(dump->json, config), tokenizerSection)
                                         : dump->text + ConfigText(config) + TokenizerText(tokenizerSection);
            }
            if (!Emit(text, o->output)) return ReportUsageError(fmt::format("{}: cannot write the output", o->output));
            return wb::kExitPass;
          }};
}

}  // namespace wb::cli
