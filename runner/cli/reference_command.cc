// `workbook reference --model PATH --tokens 1,2,3 [--all-logits]`: the float64 reference
// decoder's logits for a prompt, as JSON.
// `workbook reference --model PATH --prompt TEXT --greedy N [--cache f32|f16|int8]`: the
// reference's greedy continuation of a text (tokenized with the model's own tokenizer, BOS as
// it says), N tokens or until the end-of-text token, with each step's margin (its largest
// logit minus the next one): {"model", "prompt", "prompt_tokens", "tokens", "margins",
// "text", "cache"}. The Q8_0/Q4_0 products' inputs are quantized as the provided kernels
// quantize them and the KV cache's rows rounded as --cache says (default f16, generate's),
// so it is what `workbook generate --temperature 0` should write (the goldens of the
// workbook's own model, data/models/kjv-llama-2m/goldens.json).
//
// PATH is a GGUF file or a Hugging Face directory (config.json + safetensors), a toy fixture
// or a real checkpoint: weights are read from the mapped files row block by row block, so a
// laptop runs a 1B model (slowly; the reference is written for clarity). Output:
//   {"model": PATH, "model_type": "llama", "format": "gguf", "tokens": [...],
//    "positions": [p, ...], "logits": [[vocab values], ...]}
// with the last position only, or every position with --all-logits; %.17g, so the doubles
// round-trip. A bad file exits 2 with "workbook: <file>: <what is wrong>".
#include <algorithm>
#include <limits>
#include <charconv>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "reference/decoder/decoder.h"
#include "reference/decoder/decoder_options.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"
#include "model/tokenizer/tokenizer.h"

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

struct GreedyStep {
  int token = 0;
  double margin = 0;  // the largest logit minus the second largest
};

GreedyStep Greedy(std::span<const double> logits) {
  GreedyStep step;
  double best = -std::numeric_limits<double>::infinity(), second = best;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best) {  // ties to the lower id, as the sampler's greedy does
      second = best;
      best = logits[i];
      step.token = static_cast<int>(i);
    } else if (logits[i] > second) {
      second = logits[i];
    }
  }
  step.margin = best - second;
  return step;
}

int RunGreedy(const std::string& modelPath, const std::string& prompt, int count, const std::string& cache,
              const std::string& output) {
  auto source = model::WeightSource::Open(modelPath);
  if (!source) return ReportError(source.error());
  auto tokenizer = tokenizer::Tokenizer::Open(modelPath);
  if (!tokenizer) return ReportError(tokenizer.error());
  auto weights = model::BindWeights(source->config(), *source);
  if (!weights) return ReportError(weights.error());
  ref::DecoderOptions options;
  options.quantizeProductInputs = true;
  if (cache == "f32") {
    options.cache.type = ref::CacheRowType::kF32;
  } else if (cache == "f16") {
    options.cache.type = ref::CacheRowType::kF16;
  } else if (cache == "int8") {
    options.cache.type = ref::CacheRowType::kInt8;
  } else {
    return ReportUsageError(fmt::format("--cache is \"{}\"; it must be f32, f16 or int8", cache));
  }
  const std::vector<int32_t> promptTokens = tokenizer->Encode(prompt, /*addSpecial=*/true, /*parseSpecial=*/false);
  std::vector<int> tokens(promptTokens.begin(), promptTokens.end());
  if (tokens.empty()) return ReportUsageError("the prompt is empty and the model adds no BOS token");
  std::vector<int> made;
  std::vector<double> margins;
  std::string text;
  for (int i = 0; i < count && static_cast<int>(tokens.size()) < source->config().maxPositions; ++i) {
    auto trace = ref::RunDecoderTrace(source->config(), *weights, tokens, ref::LogitPositions::kLast, options);
    if (!trace) return ReportError(trace.error());
    const GreedyStep step = Greedy(trace->logits.Row(0));
    if (tokenizer->IsEndOfGeneration(step.token)) break;
    made.push_back(step.token);
    margins.push_back(step.margin);
    text += tokenizer->Piece(step.token);
    tokens.push_back(step.token);
  }
  const nlohmann::json out = {{"model", modelPath}, {"prompt", prompt}, {"prompt_tokens", promptTokens},
                              {"tokens", made},     {"margins", margins}, {"text", text},
                              {"cache", cache}};
  if (!Emit(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", output)) {
    return ReportUsageError(fmt::format("{}: cannot write the continuation", output));
  }
  return wb::kExitPass;
}

}  // namespace

Command AddReferenceCommand(CLI::App& app) {
  struct Options {
    std::string model;
    std::string tokens;
    bool allLogits = false;
    std::string output;
    std::string prompt;
    int greedy = 0;
    std::string cache = "f16";
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("reference", kReferenceSummary);
  c->add_option("--model", o->model, "A GGUF file or a Hugging Face directory")->required();
  auto* tokens = c->add_option("--tokens", o->tokens, "Token ids, comma-separated: 1,2,3");
  auto* prompt = c->add_option("--prompt", o->prompt, "A text, tokenized with the model's tokenizer (with --greedy)");
  tokens->excludes(prompt);
  c->add_option("--greedy", o->greedy, "With --prompt: continue it greedily for this many tokens")->needs(prompt);
  c->add_option("--cache", o->cache, "With --greedy: the KV cache rows emulated: f32, f16 or int8")
      ->capture_default_str();
  c->add_flag("--all-logits", o->allLogits, "Logits of every position, not only the last");
  c->add_option("--output", o->output, "Write the JSON to FILE instead of stdout");
  return {c, [o, tokens, prompt]() {
            if (prompt->count() > 0) {
              if (o->greedy < 1) return ReportUsageError("--prompt needs --greedy N (N >= 1)");
              return RunGreedy(o->model, o->prompt, o->greedy, o->cache, o->output);
            }
            if (tokens->count() == 0) return ReportUsageError("give --tokens, or --prompt with --greedy");
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
