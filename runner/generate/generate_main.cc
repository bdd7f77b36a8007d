// The generate program: a decoder_forward (the solution's, or with `workbook generate --mine`
// the student's stages/05-decoder, compiled by the runner against this library) writing text.
//
//   <program> --model PATH --prompt TEXT [-n N] [--seed S] [sampler options]
//             [--chat [--system TEXT] [--messages FILE.json] [--show-prompt]]
//             [--threads T] [--cache f32|f16|int8] [--format text|json]
//
// With --chat the conversation is rendered by the model's own chat template
// (chat_template.h); --show-prompt prints that text before the answer (and json output has
// it as "chat_prompt"). It tokenizes the prompt (model/tokenizer), runs it through the
// decoder in one call (the prefill; longer prompts in calls of kMaxCallTokens), then one
// token per call (decode steps), each chosen by the sampler (sampler.h), until the
// end-of-generation token, -n tokens, a full context or Ctrl-C. Text streams to stdout as it is made; the figures go to
// stderr at the end (text format) or into the JSON object (json format). With --bench it
// times the decoder instead (generate_bench.h).
//
// Exit status: 0 text written (also when stopped by the end token, -n or a full context);
// 1 the decoder failed (wrote no logits, non-finite ones, or did not advance the cache);
// 2 bad usage or a bad model file; 130 stopped by Ctrl-C (after printing the figures).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/tokenizer/tokenizer.h"
#include "runner/generate/chat_template.h"
#include "runner/generate/decoder_session.h"
#include "runner/generate/generate_bench.h"
#include "runner/generate/generate_options.h"
#include "runner/generate/program_support.h"
#include "runner/generate/sampler.h"
#include "runner/generate/utf8_stream.h"
#include "runner/harness/allocation_count.h"

namespace wb::generate {

namespace {

constexpr int kMaxCallTokens = 512;
std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted.store(true); }

int Fail(int status, const std::string& message) {
  std::fprintf(stderr, "workbook: %s\n", message.c_str());
  return status;
}

int ReportError(const Error& e) { return Fail(ExitStatusOf(e.kind), e.message); }

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A float option as the user typed it (0.05, not 0.05000000074505806).
double Shortest(float v) { return std::stod(fmt::format("{}", v)); }

int Generate(const GenerateSettings& s) {
  if (s.format != "text" && s.format != "json") return Fail(2, "--format must be text or json");
  if (s.tokens < 0) return Fail(2, "-n must be 0 or more tokens");
  if (s.threads < 0) return Fail(2, "--threads must be 0 (every core) or more");
  if (s.context < 0) return Fail(2, "--context must be 0 (the prompt and -n) or more");
  if (!s.system.empty() && !s.chat) return Fail(2, "--system is for --chat");
  if (!s.messages.empty() && !s.chat) return Fail(2, "--messages is for --chat");
  if (s.showPrompt && !s.chat) return Fail(2, "--show-prompt is for --chat");
  if (Status v = ValidateSamplerSettings(s.sampler); !v.ok()) return ReportError(v.error());
  auto cacheType = ParseCacheType(s.cache);
  if (!cacheType) return ReportError(cacheType.error());
  auto tokenizer = tokenizer::Tokenizer::Open(s.model);
  if (!tokenizer) return ReportError(tokenizer.error());

  std::vector<int32_t> prompt;
  std::string chatPrompt;  // the text the chat template wrote
  if (s.chat) {
    nlohmann::ordered_json fileMessages = nlohmann::ordered_json::array();
    if (!s.messages.empty()) {
      auto read = ReadChatMessages(s.messages);
      if (!read) return ReportError(read.error());
      fileMessages = std::move(*read);
    }
    // --prompt is the user's next message; with a messages file and no --prompt, the file's
    // conversation is the whole prompt.
    const std::optional<std::string> userPrompt =
        s.messages.empty() || !s.prompt.empty() ? std::optional<std::string>(s.prompt) : std::nullopt;
    ChatSpecialTokens specialTokens;
    if (auto bos = tokenizer->Bos()) specialTokens.bos = tokenizer->TokenText(*bos);
    if (auto eos = tokenizer->Eos()) specialTokens.eos = tokenizer->TokenText(*eos);
    auto text = RenderChatPrompt(tokenizer->ChatTemplate(),
                                 ChatConversation(s.system, fileMessages, userPrompt), specialTokens);
    if (!text) return Fail(2, fmt::format("{}: {}", s.model, text.error().message));
    chatPrompt = std::move(*text);
    // The template's text as it is: its special tokens parsed, nothing added but the BOS
    // rule of chat_template.h (no second BOS when the template writes one).
    prompt = ChatPromptIds(tokenizer->Encode(chatPrompt, /*addSpecial=*/false, /*parseSpecial=*/true),
                           tokenizer->Bos(), tokenizer->AddsBos());
  } else {
    prompt = tokenizer->Encode(s.prompt, /*addSpecial=*/true, /*parseSpecial=*/false);
  }
  if (prompt.empty()) {
    return Fail(2, "the prompt is empty and this model adds no BOS token, so there is nothing to continue: give --prompt");
  }
  const int threads = s.threads == 0 ? UsableCores() : s.threads;
  const int wanted = s.context > 0 ? s.context : static_cast<int>(prompt.size()) + std::max(1, s.tokens);
  auto opened = DecoderSession::Open(s.model, wanted, std::min(kMaxCallTokens, static_cast<int>(prompt.size())),
                                     *cacheType, threads);
  if (!opened) return ReportError(opened.error());
  DecoderSession& session = **opened;
  if (static_cast<int>(prompt.size()) > session.capacity()) {
    return Fail(2, fmt::format("the prompt is {} tokens, but the context holds {} (the model's limit is {}); "
                               "shorten it or raise --context",
                               prompt.size(), session.capacity(), session.config().maxPositions));
  }
  for (int32_t id : prompt) {
    if (id < 0 || id >= session.config().vocab) {
      return Fail(2, fmt::format("{}: the tokenizer gave token {}, outside the model's {} embeddings", s.model, id,
                                 session.config().vocab));
    }
  }

  const bool text = s.format == "text";
  if (text && s.showPrompt) {  // the prompt, then the answer after it, as one transcript
    std::fwrite(chatPrompt.data(), 1, chatPrompt.size(), stdout);
    std::fflush(stdout);
  }
  if (text && s.showPromptTokens) {
    std::fprintf(stderr, "prompt tokens: [%s]\n", fmt::format("{}", fmt::join(prompt, ", ")).c_str());
  }
  std::signal(SIGINT, OnInterrupt);

  Sampler sampler(s.sampler, session.config().vocab);
  std::vector<int32_t> history = prompt;
  history.reserve(prompt.size() + static_cast<size_t>(s.tokens) + 1);
  std::vector<int32_t> generated;
  generated.reserve(static_cast<size_t>(s.tokens) + 1);
  std::string generatedText;
  Utf8Stream stream;
  using Clock = std::chrono::steady_clock;

  const auto prefillStart = Clock::now();
  std::span<const float> logits = session.Forward(prompt);
  const double prefillSeconds = Seconds(Clock::now() - prefillStart);
  if (logits.empty()) return Fail(1, DecoderProblem(s, session, 0, prompt.size()));
  if (text && !s.chat) {  // the prompt as typed, then the continuation as it comes
    std::fwrite(s.prompt.data(), 1, s.prompt.size(), stdout);
    std::fflush(stdout);
  }

  std::string stop = "length";
  double decodeSeconds = 0;
  uint64_t decodeAllocations = 0;
  int decoded = 0;  // decode steps run (the last sampled token needs none)
  while (static_cast<int>(generated.size()) < s.tokens) {
    if (g_interrupted.load()) {
      stop = "interrupted";
      break;
    }
    const uint64_t allocationsBefore = harness::AllocationsSoFar();
    const auto stepStart = Clock::now();
    const int32_t next = sampler.Sample(logits, history);
    decodeSeconds += Seconds(Clock::now() - stepStart);
    decodeAllocations += harness::AllocationsSoFar() - allocationsBefore;
    if (tokenizer->IsEndOfGeneration(next)) {
      stop = "end of text";
      break;
    }
    generated.push_back(next);
    history.push_back(next);
    const std::string piece = tokenizer->Piece(next);
    if (text) {
      stream.Write(piece, stdout);
    } else {
      generatedText += piece;
    }
    if (static_cast<int>(generated.size()) == s.tokens) break;
    if (session.size() >= session.capacity()) {
      stop = "context full";
      break;
    }
    const int before = session.size();
    const uint64_t allocationsBeforeStep = harness::AllocationsSoFar();
    const auto forwardStart = Clock::now();
    logits = session.Forward(std::span<const int32_t>(&generated.back(), 1));
    decodeSeconds += Seconds(Clock::now() - forwardStart);
    decodeAllocations += harness::AllocationsSoFar() - allocationsBeforeStep;
    ++decoded;
    if (logits.empty()) {
      if (text) stream.Flush(stdout);
      return Fail(1, DecoderProblem(s, session, before, 1));
    }
  }
  const uint64_t peak = PeakResidentBytes();
  const double prefillRate = prefillSeconds > 0 ? prompt.size() / prefillSeconds : 0;
  const double decodeRate = decoded > 0 && decodeSeconds > 0 ? decoded / decodeSeconds : 0;
  if (text) {
    stream.Flush(stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr,
                 "\n%s\nprompt %zu tokens; prefill %.1f tokens/s (%.3f s); decode %.1f tokens/s (%d steps, %.3f s); "
                 "%zu tokens made, stopped: %s; %d threads, %s cache; peak memory %.1f MiB%s\n",
                 s.decoderName.c_str(), prompt.size(), prefillRate, prefillSeconds, decodeRate, decoded,
                 decodeSeconds, generated.size(), stop.c_str(), threads, s.cache.c_str(), peak / 1048576.0,
                 decodeAllocations > 0 && harness::AllocationsCounted()
                     ? fmt::format("; decode steps allocated {} times", decodeAllocations).c_str()
                     : "");
  } else {
    nlohmann::json out = {
        {"model", s.model},
        {"decoder", s.decoderName},
        {"prompt", s.prompt},
        {"chat", s.chat},
        {"prompt_tokens", prompt},
        {"tokens", generated},
        {"text", generatedText},
        {"stop", stop},
        {"sampler",
         {{"seed", s.sampler.seed}, {"temperature", Shortest(s.sampler.temperature)}, {"top_k", s.sampler.topK},
          {"top_p", Shortest(s.sampler.topP)}, {"min_p", Shortest(s.sampler.minP)},
          {"repeat_penalty", Shortest(s.sampler.repeatPenalty)},
          {"repeat_last_n", s.sampler.repeatLastN}}},
        {"threads", threads},
        {"cache", s.cache},
        {"timings",
         {{"prefill_seconds", prefillSeconds}, {"prefill_tokens_per_second", prefillRate},
          {"decode_steps", decoded}, {"decode_seconds", decodeSeconds}, {"decode_tokens_per_second", decodeRate}}},
        {"peak_rss_bytes", peak},
    };
    if (harness::AllocationsCounted()) out["decode_allocations"] = decodeAllocations;
    if (s.chat) out["chat_prompt"] = chatPrompt;
    // Text cut inside a UTF-8 character is kept, its stray bytes shown as U+FFFD.
    std::puts(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return stop == "interrupted" ? 130 : 0;
}

}  // namespace

}  // namespace wb::generate

int main(int argc, char** argv) {
  wb::generate::GenerateSettings settings;
  CLI::App app{"Decoder Workbook: a decoder writes text.", "workbook generate"};
  wb::generate::AddGenerateOptions(app, settings);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return settings.bench ? wb::generate::RunBench(settings) : wb::generate::Generate(settings);
}
