// `workbook reference --model PATH --tokens 1,2,3 [--all-logits]`: the float64 reference
// decoder's logits for a prompt, as JSON.
//
// PATH is a GGUF file or a Hugging Face directory (config.json + safetensors), a toy fixture
// or a real checkpoint: weights are read from the mapped files row block by row block, so a
// laptop runs a 1B model (slowly; the reference is written for clarity). Output:
//   {"model": PATH, "model_type": "llama", "format": "gguf", "tokens": [...],
//    "positions": [p, ...], "logits": [[vocab values], ...]}
// with the last position only, or every position with --all-logits; %.17g, so the doubles
// round-trip. A bad file exits 2 with "workbook: <file>: <what is wrong>".
#include <algorithm>
#include <charconv>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "reference/decoder/decoder.h"
#include "model/config/weight_source.h"

namespace wb::cli {

namespace {

Expected<std::vector<int>> ParseTokens(const std::string& text) {
  std::vector<int> tokens;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item(text.data() + start, comma - start);
    int id = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || id < 0) {
      return BadUsage(fmt::format("--tokens: \"{}\" is not a token id (expected e.g. 1,2,3)", item));
    }
    tokens.push_back(id);
    start = comma + 1;
  }
  return tokens;
}

std::string RenderLogits(const std::string& path, const model::ModelConfig& config, const std::vector<int>& tokens,
                         const ref::DecoderLogits& logits) {
  std::vector<int> positions;
  std::vector<std::string> rows;
  for (int r = 0; r < logits.rows; ++r) {
    positions.push_back(logits.firstPosition + r);
    std::vector<std::string> values;
    for (double v : logits.Row(r)) values.push_back(fmt::format("{:.17g}", v));
    rows.push_back(fmt::format("    [{}]", fmt::join(values, ", ")));
  }
  const nlohmann::json quotedPath = path;
  return fmt::format(
      "{{\n  \"model\": {},\n  \"model_type\": \"{}\",\n  \"format\": \"{}\",\n  \"tokens\": [{}],\n"
      "  \"positions\": [{}],\n  \"logits\": [\n{}\n  ]\n}}\n",
      quotedPath.dump(), model::FamilyName(config.family),
      config.format == model::WeightFormat::kGguf ? "gguf" : "huggingface", fmt::join(tokens, ", "),
      fmt::join(positions, ", "), fmt::join(rows, ",\n"));
}

}  // namespace

Command AddReferenceCommand(CLI::App& app) {
  struct Options {
    std::string model;
    std::string tokens;
    bool allLogits = false;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("reference", kReferenceSummary);
  c->add_option("--model", o->model, "A GGUF file or a Hugging Face directory")->required();
  c->add_option("--tokens", o->tokens, "Token ids, comma-separated: 1,2,3")->required();
  c->add_flag("--all-logits", o->allLogits, "Logits of every position, not only the last");
  c->add_option("--output", o->output, "Write the JSON to FILE instead of stdout");
  return {c, [o]() {
            auto tokens = ParseTokens(o->tokens);
            if (!tokens) return ReportError(tokens.error());
            auto source = model::WeightSource::Open(o->model);
            if (!source) return ReportError(source.error());
            auto logits = ref::RunDecoder(*source, *tokens,
                                          o->allLogits ? ref::LogitPositions::kAll : ref::LogitPositions::kLast);
            if (!logits) return ReportError(logits.error());
            const std::string text = RenderLogits(o->model, source->config(), *tokens, *logits);
            if (!Emit(text, o->output)) return ReportUsageError(fmt::format("{}: cannot write the logits", o->output));
            return wb::kExitPass;
          }};
}

}  // namespace wb::cli
