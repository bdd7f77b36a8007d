#include "decoder_child.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace wb::stage05 {

namespace {

using L = DecoderCall;

uint64_t BytesOnDisk(const std::string& path) {
  namespace fsys = std::filesystem;
  std::error_code ec;
  if (fsys::is_regular_file(path, ec)) return fsys::file_size(path, ec);
  uint64_t total = 0;
  for (const auto& entry : fsys::recursive_directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

}  // namespace

std::span<const int32_t> ChildRun::Ints(DecoderCall::Buffer b) {
  const auto bytes = region.Bytes<DecoderCall>(b);
  return {reinterpret_cast<const int32_t*>(bytes.data()), bytes.size() / sizeof(int32_t)};
}

bool PerLayer(L::Buffer b) { return b != L::kEmbedding && b != L::kFinalNorm && b != L::kLogits; }

size_t RowWidth(const DecoderCase& data, L::Buffer b) {
  const model::ModelConfig& c = data.config;
  switch (b) {
    case L::kQ:
    case L::kAttnOut: return c.qWidth();
    case L::kK:
    case L::kV: return c.kvWidth();
    case L::kExpertIds:
    case L::kExpertWeights: return c.expertsPerToken;
    case L::kLogits: return c.vocab;
    default: return c.hidden;
  }
}

size_t SliceStart(const DecoderCase& data, L::Buffer b, int call, int layer) {
  const CallSpan& span = data.calls[call];
  const size_t slices = PerLayer(b) ? static_cast<size_t>(data.Layers()) : 1;
  return (static_cast<size_t>(span.position) * slices + static_cast<size_t>(layer) * span.tokens) * RowWidth(data, b);
}

Expected<ChildRun> RunCallsInChild(const DecoderCase& data, int threads, const StageContext& context) {
  const size_t tokens = data.tokens.size();
  const size_t calls = data.calls.size();
  const size_t arena = CacheArenaBytes(data.geometry);
  int widest = 0;
  for (const CallSpan& call : data.calls) widest = std::max(widest, call.tokens);

  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kModelPath] = BufferSize::Bytes(data.modelPath.size(), shm::kReadOnly);
  sizes[L::kTokens] = BufferSize::Bytes(tokens * sizeof(int32_t), shm::kReadOnly);
  sizes[L::kCallTokens] = BufferSize::Bytes(calls * sizeof(int32_t), shm::kReadOnly);
  sizes[L::kPageTable] = BufferSize::Bytes(data.pageTable.size() * sizeof(int32_t), shm::kReadOnly);
  sizes[L::kArena] = BufferSize::Bytes(arena, shm::kWritable);
  sizes[L::kArenaAfter] = BufferSize::Bytes(arena * calls, shm::kWritable);
  sizes[L::kAllocations] = BufferSize::Bytes(2 * calls * sizeof(uint64_t), shm::kWritable);
  sizes[L::kScratch] = {ScratchFloats(data.config, widest), shm::kWritable};
  for (uint32_t b = L::kEmbedding; b < L::kBufferCount; ++b) {
    const auto buffer = static_cast<L::Buffer>(b);
    const size_t slices = PerLayer(buffer) ? static_cast<size_t>(data.Layers()) : 1;
    // A model without experts still gets a (never used) element, so every slot has a size.
    const size_t elements = std::max<size_t>(1, tokens * slices * RowWidth(data, buffer));
    sizes[b] = buffer == L::kExpertIds ? BufferSize::Bytes(elements * sizeof(int32_t), shm::kWritable)
                                       : BufferSize{elements, shm::kWritable};
  }
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  ChildRun run{.outcome = {}, .region = std::move(*created), .limits = context.limits};
  SharedRegion& region = run.region;
  std::memcpy(region.Bytes<L>(L::kModelPath).data(), data.modelPath.data(), data.modelPath.size());
  std::memcpy(region.Bytes<L>(L::kTokens).data(), data.tokens.data(), tokens * sizeof(int32_t));
  std::vector<int32_t> callTokens;
  for (const CallSpan& call : data.calls) callTokens.push_back(call.tokens);
  std::memcpy(region.Bytes<L>(L::kCallTokens).data(), callTokens.data(), calls * sizeof(int32_t));
  std::memcpy(region.Bytes<L>(L::kPageTable).data(), data.pageTable.data(), data.pageTable.size() * sizeof(int32_t));
  region.PoisonOutputs();
  region.SetParams<L>({.calls = static_cast<int32_t>(calls),
                       .cacheType = static_cast<int32_t>(data.geometry.type),
                       .pageSize = data.geometry.pageSize,
                       .pages = data.geometry.pages,
                       .threads = threads,
                       .allLogits = data.lastLogitsOnly ? 0 : 1,
                       .pathBytes = static_cast<int32_t>(data.modelPath.size())});

  run.limits.readablePaths.push_back(data.modelPath);
  // The model's file is mapped; stage 4's optional pack_q step may take up to twice its bytes
  // again, plus a little per matrix (contracts/stage04_quant.h), packed in the child's memory.
  if (run.limits.memoryBytes > 0) run.limits.memoryBytes += 3 * BytesOnDisk(data.modelPath) + (uint64_t{256} << 20);
  auto ran = RunInChild(context.harness, region, run.limits);
  if (!ran.ok()) return ran.error();
  run.outcome = std::move(*ran);
  run.callsReturned = run.outcome.ending == ChildOutcome::Ending::kReturned
                          ? static_cast<int>(calls)
                          : static_cast<int>(std::min<uint64_t>(run.outcome.report.callIndex, calls));
  return run;
}

}  // namespace wb::stage05
