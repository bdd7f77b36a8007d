// The options of `workbook generate` (and of `workbook bench 5`, which runs the same program),
// declared once: the front end (runner/cli/generate_command.cc) parses them to check them and
// to print its help, then hands the same arguments to the generate program
// (generate_main.cc), which is linked with a decoder_forward: the solution's or, with
// --mine, the student's.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runner/generate/sampler.h"

namespace wb::generate {

struct GenerateSettings {
  std::string model;
  std::string prompt;
  std::string system;     // --chat: a system message before the prompt
  std::string messages;   // --chat: a JSON file of earlier messages ({role, content} objects)
  bool chat = false;
  bool showPrompt = false;  // --chat: print the rendered prompt before the answer
  int tokens = 64;        // -n: at most this many new tokens
  SamplerSettings sampler;
  int threads = 0;        // 0: every core this process may use
  std::string cache = "f16";
  int context = 0;        // 0: the prompt and -n, up to the model's context
  std::string format = "text";
  bool showPromptTokens = false;

  // bench mode (`workbook bench 5`)
  bool bench = false;
  int benchPrefill = 128;
  int benchDecode = 64;
  int benchRepeats = 3;
  std::string benchThreads = "1,2";
  // The runner times the runs from outside: the program stops itself where each timed
  // prefill and decode begins and ends (generate_bench.h), and the runner's clock times them.
  bool benchStops = false;
  std::string plot;
  std::string decoderName = "the solution's decoder (solutions/05-decoder)";
};

// Adds every option to `app` (generate's or the program's own parser), bound to `s`.
void AddGenerateOptions(CLI::App& app, GenerateSettings& s);
// The arguments that give `s` back when parsed by AddGenerateOptions (the program's argv
// after its name).
std::vector<std::string> ToArguments(const GenerateSettings& s);

}  // namespace wb::generate
