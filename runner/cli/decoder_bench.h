// `workbook bench 5`: the whole decoder's speed against this machine's memory bandwidth
// (decoder_bench.cc says what it measures and how).
#pragma once

#include <string>

namespace wb::cli {

struct DecoderBenchOptions {
  bool solutions = false;
  bool mine = false;  // the default; said explicitly
  std::string stagesDir;
  std::string model;  // "": the TinyLlama-1.1B-shaped models in Q4_0 and Q8_0
  std::string kernels = "solutions";
  std::string format = "text";
  std::string plot;
  int repeats = 3;
  bool contention = false;  // 1 and 2 threads, as the machine is and with busy loops beside
};

int RunDecoderBench(const DecoderBenchOptions& options);

}  // namespace wb::cli
