// What the generate program's two modes (generate_main.cc, generate_bench.cc) share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/expected.h"
#include "runner/generate/decoder_session.h"
#include "runner/generate/generate_options.h"

namespace wb::generate {

// The cores this process may run on (sched_getaffinity), at least 1.
int UsableCores();
// "f32", "f16" or "int8".
Expected<CacheType> ParseCacheType(const std::string& name);
// The process's peak resident memory so far (getrusage's ru_maxrss).
uint64_t PeakResidentBytes();
// The process's anonymous memory on transparent huge pages now (AnonHugePages in
// /proc/self/smaps_rollup, proc(5)): mostly the model's weights, which the program reads into
// such memory. Nullopt where that file cannot be read.
std::optional<uint64_t> HugePageBytes();
// Bytes of the model's files: a GGUF file, or a Hugging Face folder's *.safetensors.
uint64_t ModelFileBytes(const std::string& path);
// The sentence for a Forward() that failed (session.problem()), naming the decoder; the call
// was `tokens` tokens starting at position `before`.
std::string DecoderProblem(const GenerateSettings& s, const DecoderSession& session, int before, size_t tokens);

}  // namespace wb::generate
