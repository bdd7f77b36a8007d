#include "runner/generate/generate_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/splitmix64.h"
#include "runner/generate/decoder_session.h"
#include "runner/generate/program_support.h"
#include "runner/harness/allocation_count.h"
#include "runner/harness/stop_self.h"
#include "runner/harness/trusted_clock.h"

namespace wb::generate {

namespace {

int Fail(int status, const std::string& message) {
  std::fprintf(stderr, "workbook: %s\n", message.c_str());
  return status;
}

int32_t Argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Expected<std::vector<int>> ParseThreadList(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int value = 0;
    try {
      value = std::stoi(item);
    } catch (...) {
      value = 0;
    }
    if (value < 1 || value > 1024) return BadUsage(fmt::format("--bench-threads: \"{}\" is not a thread count", item));
    out.push_back(value);
    start = comma + 1;
  }
  return out;
}

}  // namespace

int RunBench(const GenerateSettings& s) {
  if (s.benchPrefill < 1 || s.benchDecode < 1 || s.benchRepeats < 1) {
    return Fail(2, "--bench-prefill, --bench-decode and --bench-repeats must each be at least 1");
  }
  auto threadList = ParseThreadList(s.benchThreads);
  if (!threadList) return Fail(2, threadList.error().message);
  auto cacheType = ParseCacheType(s.cache);
  if (!cacheType) return Fail(2, cacheType.error().message);

  nlohmann::json runs = nlohmann::json::array();
  uint64_t weightBytes = 0;
  for (int threads : *threadList) {
    auto opened = DecoderSession::Open(s.model, s.benchPrefill + s.benchDecode, s.benchPrefill, *cacheType, threads);
    if (!opened) return Fail(ExitStatusOf(opened.error().kind), opened.error().message);
    DecoderSession& session = **opened;
    weightBytes = session.WeightBytesPerToken();
    std::vector<int32_t> prompt(static_cast<size_t>(s.benchPrefill));
    SplitMix64 random(5);
    for (int32_t& id : prompt) id = static_cast<int32_t>(random.Next() % static_cast<uint64_t>(session.config().vocab));

    std::vector<double> prefillRates, decodeRates;
    uint64_t decodeAllocations = 0;
    // Timed with the kernel's clock (runner/harness/trusted_clock.h), the C library's beside it:
    // the decoder is linked into this program, and a clock_gettime of its own would replace
    // the library's.
    using Clock = std::chrono::steady_clock;
    double trustedTotal = 0, libraryTotal = 0;
    // Where the runner's clock starts and stops a span (--bench-stops): just around the timed
    // work, on the timed runs only.
    auto markSpan = [&](int run) {
      if (s.benchStops && run > 0) harness::StopThisProcess();
    };
    auto timed = [&](const auto& call) {
      const auto libraryStart = Clock::now();
      const double start = harness::TrustedSeconds();
      call();
      const double took = harness::TrustedSeconds() - start;
      libraryTotal += std::chrono::duration<double>(Clock::now() - libraryStart).count();
      trustedTotal += took;
      return took;
    };
    for (int run = 0; run <= s.benchRepeats; ++run) {  // run 0 warms pages, caches and threads
      session.Reset();
      std::span<const float> logits;
      markSpan(run);
      const double prefillSeconds = timed([&] { logits = session.Forward(prompt); });
      markSpan(run);
      if (logits.empty()) return Fail(1, DecoderProblem(s, session, 0, prompt.size()));
      double decodeSeconds = 0;
      markSpan(run);
      for (int step = 0; step < s.benchDecode; ++step) {
        int32_t next = Argmax(logits);
        const int before = session.size();
        const uint64_t allocationsBefore = harness::AllocationsSoFar();
        decodeSeconds += timed([&] { logits = session.Forward(std::span<const int32_t>(&next, 1)); });
        if (run > 0) decodeAllocations += harness::AllocationsSoFar() - allocationsBefore;
        if (logits.empty()) return Fail(1, DecoderProblem(s, session, before, 1));
      }
      markSpan(run);
      if (run == 0) continue;
      if (!harness::ClocksAgree(trustedTotal, libraryTotal)) {
        return Fail(1, "the program's clock (clock_gettime as the C library gives it) disagreed with the system's: "
                       "no figure is printed when the clock the decoder sees is not the system's");
      }
      prefillRates.push_back(s.benchPrefill / prefillSeconds);
      decodeRates.push_back(s.benchDecode / decodeSeconds);
    }
    nlohmann::json entry = {{"threads", threads},
                            {"prefill_tokens_per_second", prefillRates},
                            {"decode_tokens_per_second", decodeRates}};
    if (harness::AllocationsCounted()) entry["decode_allocations"] = decodeAllocations;
    if (const auto huge = HugePageBytes()) entry["huge_page_bytes"] = *huge;  // while the weights are loaded
    runs.push_back(entry);
  }
  const nlohmann::json out = {{"model", s.model},
                              {"decoder", s.decoderName},
                              {"file_bytes", ModelFileBytes(s.model)},
                              {"weight_bytes_per_token", weightBytes},
                              {"cache", s.cache},
                              {"prefill", s.benchPrefill},
                              {"decode", s.benchDecode},
                              {"runs", runs},
                              {"peak_rss_bytes", PeakResidentBytes()}};
  std::puts(out.dump(2).c_str());
  return 0;
}

}  // namespace wb::generate
