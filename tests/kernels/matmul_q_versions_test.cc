// Stage 4's solution: every version of matmul_q's code products that this CPU runs gives the
// portable version's results bit for bit, on shapes that reach every edge of the kernel (a
// partial row group, an odd block count, a partial Q4_0 quad, more blocks than a scale batch,
// several token chunks), with both accumulate modes, from ggml's layout (version 3) and from the
// solution's packed layout (version 4); and a version that is wrong is caught.
//
// The solution file is compiled into this test (its kernels live in an anonymous namespace),
// with the flags student code gets (tests/kernels/meson.build).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "solutions/04-quant/quant.cc"

namespace {

struct Case {
  WeightType type;
  int T, rows, cols;
};

// Random codes over the whole range the contract allows (Q8_0 weights -127 .. 127, and -128,
// which a file may hold; activations -127 .. 127), and scales that are ordinary halves.
std::vector<unsigned char> RandomWeights(const Case& c, std::mt19937& rng) {
  const size_t blocks = static_cast<size_t>(c.rows) * (c.cols / QK);
  std::uniform_int_distribution<int> byte(0, 255), scale(0x2000, 0x3c00);
  std::vector<unsigned char> bytes;
  for (size_t b = 0; b < blocks; ++b) {
    const uint16_t d = static_cast<uint16_t>(scale(rng) | (byte(rng) & 1) << 15);
    unsigned char head[2];
    std::memcpy(head, &d, 2);
    bytes.insert(bytes.end(), head, head + 2);
    const int codes = c.type == WeightType::kQ8_0 ? QK : QK / 2;
    for (int j = 0; j < codes; ++j) bytes.push_back(static_cast<unsigned char>(byte(rng)));
  }
  return bytes;
}

std::vector<BlockQ8_0> RandomActivations(const Case& c, std::mt19937& rng) {
  std::uniform_int_distribution<int> code(-127, 127), scale(0x2000, 0x3c00);
  std::vector<BlockQ8_0> x(static_cast<size_t>(c.T) * (c.cols / QK));
  for (BlockQ8_0& b : x) {
    b.d = static_cast<uint16_t>(scale(rng));
    for (int8_t& q : b.qs) q = static_cast<int8_t>(code(rng));
  }
  return x;
}

// y from one band kernel over all rows, starting from `start` (kAdd reads it). A packed kernel
// (version 4) reads the matrix as the solution's pack_q lays it out, in zeroed bytes as the
// runner hands them over.
std::vector<float> Run(BandKernel kernel, bool packed, const Case& c, const std::vector<unsigned char>& w,
                       const std::vector<BlockQ8_0>& x, Accumulate mode, const std::vector<float>& start) {
  QuantMatrix W{c.type, w.data(), c.rows, c.cols};
  std::vector<unsigned char> bytes;
  if (packed) {
    bytes.assign(pack_q_bytes(W), 0);
    pack_q(W, bytes.data());
    W.packed = bytes.data();
  }
  std::vector<float> y = start;
  kernel(c.T, x.data(), W, y.data(), mode, 0, c.rows);
  return y;
}

// How many (case, mode) results of `kernel` differ from the portable version in any bit: the
// portable version 3 for a kernel of version 3, the portable version 4 for a packed one.
int Disagreements(BandKernel kernel, const char* name, bool packed = false) {
  std::mt19937 rng(2026);
  const std::vector<Case> cases = {
      {WeightType::kQ8_0, 1, 4, 32},     {WeightType::kQ8_0, 1, 7, 96},      {WeightType::kQ8_0, 3, 9, 544},
      {WeightType::kQ8_0, 17, 5, 160},   {WeightType::kQ8_0, 2, 64, 2048},   {WeightType::kQ4_0, 1, 4, 32},
      {WeightType::kQ4_0, 1, 6, 160},    {WeightType::kQ4_0, 2, 9, 544},     {WeightType::kQ4_0, 33, 3, 96},
      {WeightType::kQ4_0, 1, 64, 2048},  {WeightType::kQ4_0, 5, 13, 128 * 3}, {WeightType::kQ8_0, 70, 17, 64},
      {WeightType::kQ4_0, 67, 18, 96}};  // over 64 tokens: version 4 takes them in two chunks
  int differ = 0;
  for (const Case& c : cases) {
    const auto w = RandomWeights(c, rng);
    const auto x = RandomActivations(c, rng);
    std::vector<float> start(static_cast<size_t>(c.T) * c.rows);
    for (float& v : start) v = std::uniform_real_distribution<float>(-4, 4)(rng);
    for (Accumulate mode : {Accumulate::kOverwrite, Accumulate::kAdd}) {
      const auto want = Run(packed ? MatmulQPackedBandPortable : MatmulQBandPortable, packed, c, w, x, mode, start);
      const auto got = Run(kernel, packed, c, w, x, mode, start);
      if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0) {
        ++differ;
        const std::string what = std::string(name) + (packed ? " (packed)" : "") + ": " + (c.type == WeightType::kQ8_0 ? "Q8_0" : "Q4_0") +
                                 " T = " + std::to_string(c.T) + ", " + std::to_string(c.rows) + " x " +
                                 std::to_string(c.cols) + (mode == Accumulate::kAdd ? ", kAdd" : "") +
                                 " differs from the portable version";
        MESSAGE(what);
      }
    }
  }
  return differ;
}

}  // namespace

TEST_CASE("every version this CPU runs agrees with the portable one bit for bit") {
  int ran = 0;
  for (const BandVersion& v : kBandVersions) {
    if (!v.supported()) {
      const std::string what = std::string(v.name) + ": this CPU lacks its instructions; not run";
      MESSAGE(what);
      continue;
    }
    CHECK_MESSAGE(Disagreements(v.kernel, v.name) == 0, std::string(v.name));
    CHECK_MESSAGE(Disagreements(v.packed, v.name, true) == 0, std::string(v.name).append(" (packed)"));
    ++ran;
  }
  CHECK(ran >= 1);
}

#if defined(__x86_64__)
namespace {
// A planted wrong fast version: VNNI products of weight codes offset by 128 without the
// correction that takes 128 x sum(x) off again (the Q8_0 path); Q4_0 is unaffected.
struct VnniWithoutCorrection : Avx512VnniCodes {
  WB_TARGET_AVX512_VNNI static Ints Q8Pair(const unsigned char* a, const unsigned char* b, const Words* pair) {
    const UBytes w = reinterpret_cast<UBytes>(Join(Load<Bytes32>(a), Load<Bytes32>(b)));
    return DotBytes(Ints{}, w ^ 0x80, pair[0]);
  }
};
WB_TARGET_AVX512_VNNI __attribute__((flatten)) void WrongBand(int T, const BlockQ8_0* xq, const QuantMatrix& W,
                                                              float* y, Accumulate mode, int r0, int r1) {
  MatmulQBand<VnniWithoutCorrection>(T, xq, W, y, mode, r0, r1);
}

// Another: AVX2 products with the activation's sign not taken from the weight (|w| x), the
// slip ggml's sign trick exists to avoid.
struct Avx2WithoutSign : Avx2Codes {
  WB_TARGET_AVX2 static Ints8 Q8Block(const unsigned char* w, const int8_t* x) {
    const __m256i wv = Load32(w);
    return DotBytes(_mm256_sign_epi8(wv, wv), Load32(x));
  }
  WB_TARGET_AVX2 static Ints Q8Pair(const unsigned char* a, const unsigned char* b, const Words* pair) {
    const int8_t* x = reinterpret_cast<const int8_t*>(&pair[0]);
    return Join8(Q8Block(a, x), Q8Block(b, x + 32));
  }
};
WB_TARGET_AVX2 __attribute__((flatten)) void WrongAvx2Band(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y,
                                                           Accumulate mode, int r0, int r1) {
  MatmulQBand<Avx2WithoutSign>(T, xq, W, y, mode, r0, r1);
}

// Packed (version 4): VNNI's Q8_0 products of codes stored plus 128, from zero instead of from
// the correction -128 sum(x); AVX2's Q4_0 nibbles from zero instead of -8 sum(x).
struct PackedVnniWithoutCorrection : Avx512VnniCodes {
  WB_TARGET_AVX512_VNNI static Ints PackedQ8(const unsigned char* codes, const int8_t* x, int32_t) {
    return Avx512VnniCodes::PackedQ8(codes, x, 0);
  }
};
WB_TARGET_AVX512_VNNI __attribute__((flatten)) void WrongPackedBand(int T, const BlockQ8_0* xq, const QuantMatrix& W,
                                                                    float* y, Accumulate mode, int r0, int r1) {
  MatmulQPackedBand<PackedVnniWithoutCorrection>(T, xq, W, y, mode, r0, r1);
}
struct PackedAvx2WithoutOffset : Avx2Codes {
  WB_TARGET_AVX2 static Ints PackedQ4(const unsigned char* codes, const int8_t* x, int32_t) {
    return Avx2Codes::PackedQ4(codes, x, 0);
  }
};
WB_TARGET_AVX2 __attribute__((flatten)) void WrongPackedAvx2Band(int T, const BlockQ8_0* xq, const QuantMatrix& W,
                                                                 float* y, Accumulate mode, int r0, int r1) {
  MatmulQPackedBand<PackedAvx2WithoutOffset>(T, xq, W, y, mode, r0, r1);
}
}  // namespace

TEST_CASE("a wrong fast version is caught by the same comparison") {
  for (const BandVersion& v : kBandVersions) {
    if (!v.supported()) continue;
    if (std::string(v.name) == "avx512vnni") {
      CHECK(Disagreements(WrongBand, "planted VNNI") > 0);
      CHECK(Disagreements(WrongPackedBand, "planted packed VNNI", true) > 0);
    }
    if (std::string(v.name) == "avx2") {
      CHECK(Disagreements(WrongAvx2Band, "planted AVX2") > 0);
      CHECK(Disagreements(WrongPackedAvx2Band, "planted packed AVX2", true) > 0);
    }
  }
}
#endif

// A case's random matrix, packed as the runner packs it (zeroed bytes), with random activations.
struct PackedCase {
  std::vector<unsigned char> weights;
  std::vector<BlockQ8_0> x;
  std::vector<unsigned char> bytes;
  QuantMatrix W;
  PackedCase(const Case& c, std::mt19937& rng)
      : weights(RandomWeights(c, rng)), x(RandomActivations(c, rng)), W{c.type, weights.data(), c.rows, c.cols} {
    bytes.assign(pack_q_bytes(W), 0);
    pack_q(W, bytes.data());
    W.packed = bytes.data();
  }
};

// A prompt's tokens meet the packed blocks four at a time and the rest one at a time; a token's
// results must not depend on which (prefill and decode give the same bits for the same token).
TEST_CASE("a token's packed products do not depend on how many tokens the call has") {
  std::mt19937 rng(11);
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
    const Case c{type, 9, 35, 224};
    const PackedCase p(c, rng);
    const QuantMatrix& W = p.W;
    const auto& x = p.x;
    std::vector<float> all(static_cast<size_t>(c.T) * c.rows);
    matmul_q(c.T, x.data(), W, all.data(), Accumulate::kOverwrite, 1);
    const int blocks = c.cols / QK;
    for (int t = 0; t < c.T; ++t) {
      std::vector<float> alone(static_cast<size_t>(c.rows));
      matmul_q(1, x.data() + static_cast<size_t>(t) * blocks, W, alone.data(), Accumulate::kOverwrite, 1);
      CHECK_MESSAGE(std::memcmp(alone.data(), all.data() + static_cast<size_t>(t) * c.rows, alone.size() * sizeof(float)) == 0,
                    "token " << t << (type == WeightType::kQ8_0 ? " (Q8_0)" : " (Q4_0)"));
    }
  }
}

// Stage 5's provided kernels hand matmul_q slices of a packed matrix (QuantMatrix's
// packedFirstRow): a slice that starts at a packed group must give exactly the whole matrix's
// rows, and one that starts inside a group (read from W.blocks) the rows of ggml's layout.
TEST_CASE("a slice of a packed matrix gives the whole matrix's rows, bit for bit") {
  std::mt19937 rng(7);
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
    const Case c{type, 1, 53, 160};
    const PackedCase p(c, rng);
    const QuantMatrix& whole = p.W;
    const auto& w = p.weights;
    const auto& x = p.x;
    std::vector<float> all(static_cast<size_t>(c.rows));
    matmul_q(1, x.data(), whole, all.data(), Accumulate::kOverwrite, 1);
    const size_t rowBytes = static_cast<size_t>(c.cols / QK) * (type == WeightType::kQ8_0 ? 34 : 18);
    for (int first : {16, 32, 7}) {
      QuantMatrix slice = whole;
      slice.blocks = w.data() + static_cast<size_t>(first) * rowBytes;
      slice.rows = c.rows - first;
      slice.packedFirstRow = first;
      std::vector<float> part(static_cast<size_t>(slice.rows));
      matmul_q(1, x.data(), slice, part.data(), Accumulate::kOverwrite, 1);
      if (first % kPackRows == 0) {
        CHECK(std::memcmp(part.data(), all.data() + first, part.size() * sizeof(float)) == 0);
      } else {
        QuantMatrix plain = slice;
        plain.packed = nullptr;
        std::vector<float> unpacked(part.size());
        matmul_q(1, x.data(), plain, unpacked.data(), Accumulate::kOverwrite, 1);
        CHECK(std::memcmp(part.data(), unpacked.data(), part.size() * sizeof(float)) == 0);
      }
    }
  }
}
