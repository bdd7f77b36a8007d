#include "runner/generate/generate_options.h"

#include <fmt/format.h>

namespace wb::generate {

void AddGenerateOptions(CLI::App& app, GenerateSettings& s) {
  app.add_option("--model", s.model, "A GGUF file or a Hugging Face folder (config.json, safetensors, tokenizer.json)")
      ->required();
  app.add_option("-p,--prompt", s.prompt, "The text to continue (with --chat: the user's message)");
  app.add_option("-n,--tokens", s.tokens, "At most this many new tokens")->capture_default_str();
  app.add_option("--seed", s.sampler.seed, "The sampler's seed: the same seed, the same text")->capture_default_str();
  app.add_option("--temperature", s.sampler.temperature, "0: greedy, always the most likely token")
      ->capture_default_str();
  app.add_option("--top-k", s.sampler.topK, "Keep the k most likely tokens (0: all)")->capture_default_str();
  app.add_option("--top-p", s.sampler.topP, "Keep the most likely tokens whose mass reaches p (1: all)")
      ->capture_default_str();
  app.add_option("--min-p", s.sampler.minP, "Drop tokens less likely than min-p times the most likely (0: none)")
      ->capture_default_str();
  app.add_option("--repeat-penalty", s.sampler.repeatPenalty, "Penalise tokens seen lately (1: off)")
      ->capture_default_str();
  app.add_option("--repeat-last-n", s.sampler.repeatLastN, "How many recent tokens the penalty looks at")
      ->capture_default_str();
  app.add_flag("--chat", s.chat, "Format the prompt with the model's chat template");
  app.add_option("--system", s.system, "With --chat: a system message");
  app.add_option("--messages", s.messages, "With --chat: earlier turns, a JSON list of {role, content} objects");
  app.add_flag("--show-prompt", s.showPrompt, "With --chat: print the prompt the chat template wrote");
  app.add_option("-t,--threads", s.threads, "Threads for the decoder (0: every core)")->capture_default_str();
  app.add_option("--cache", s.cache, "The KV cache's rows: f32, f16 or int8")->capture_default_str();
  app.add_option("--context", s.context, "Positions the KV cache holds (0: the prompt and -n)")->capture_default_str();
  app.add_option("--format", s.format, "text (streamed) or json (for scripts)")->capture_default_str();
  app.add_flag("--show-prompt-tokens", s.showPromptTokens, "Print the prompt's token ids before the text");
  // The bench mode, which `workbook bench 5` runs; not for direct use.
  app.add_flag("--bench", s.bench)->group("");
  app.add_option("--bench-prefill", s.benchPrefill)->group("");
  app.add_option("--bench-decode", s.benchDecode)->group("");
  app.add_option("--bench-repeats", s.benchRepeats)->group("");
  app.add_option("--bench-threads", s.benchThreads)->group("");
  app.add_flag("--bench-stops", s.benchStops)->group("");
  app.add_option("--plot", s.plot)->group("");
  app.add_option("--decoder-name", s.decoderName)->group("");
}

std::vector<std::string> ToArguments(const GenerateSettings& s) {
  // Floats with enough digits to read back the same float.
  auto real = [](float v) { return fmt::format("{}", v); };
  std::vector<std::string> a = {"--model", s.model, "--prompt", s.prompt, "-n", std::to_string(s.tokens),
                                "--seed", std::to_string(s.sampler.seed), "--temperature", real(s.sampler.temperature),
                                "--top-k", std::to_string(s.sampler.topK), "--top-p", real(s.sampler.topP),
                                "--min-p", real(s.sampler.minP), "--repeat-penalty", real(s.sampler.repeatPenalty),
                                "--repeat-last-n", std::to_string(s.sampler.repeatLastN),
                                "--threads", std::to_string(s.threads), "--cache", s.cache,
                                "--context", std::to_string(s.context), "--format", s.format,
                                "--decoder-name", s.decoderName};
  if (s.chat) a.push_back("--chat");
  if (!s.system.empty()) a.insert(a.end(), {"--system", s.system});
  if (!s.messages.empty()) a.insert(a.end(), {"--messages", s.messages});
  if (s.showPrompt) a.push_back("--show-prompt");
  if (s.showPromptTokens) a.push_back("--show-prompt-tokens");
  if (s.bench) {
    a.insert(a.end(), {"--bench", "--bench-prefill", std::to_string(s.benchPrefill), "--bench-decode",
                       std::to_string(s.benchDecode), "--bench-repeats", std::to_string(s.benchRepeats),
                       "--bench-threads", s.benchThreads});
    if (s.benchStops) a.push_back("--bench-stops");
    if (!s.plot.empty()) a.insert(a.end(), {"--plot", s.plot});
  }
  return a;
}

}  // namespace wb::generate
