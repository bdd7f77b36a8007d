// Deterministic data and the packed weight file: same seed, same bytes; anything that is
// not a whole, intact file is refused with a message naming the file and the field.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/packed_weights.h"
#include "common/splitmix64.h"
#include "reference/gen/block_data.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace data_test {

namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("wb-test-" + std::to_string(getpid()) + "-" + name)).string();
}

std::vector<char> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

wb::PackedWeights Small() {
  wb::PackedWeights w;
  w.shape = {4, 2, 1, 2, 8};
  w.offsets = {0, 4, 10};
  w.seed = 99;
  for (int i = 0; i < 16; ++i) w.values.push_back(0.25f * static_cast<float>(i) - 1.0f);
  return w;
}

}  // namespace

TEST_CASE("SplitMix64 reproduces the published sequence for seed 1234567") {
  // The first outputs of the reference implementation (Vigna's splitmix64.c / Java's
  // SplittableRandom) for this seed.
  wb::SplitMix64 rng(1234567);
  CHECK(rng.Next() == 6457827717110365317ull);
  CHECK(rng.Next() == 3203168211198807973ull);
  CHECK(rng.Next() == 9817491932198370423ull);
  CHECK(rng.Next() == 4593380528125082431ull);
  CHECK(rng.Next() == 16408922859458223821ull);
}

TEST_CASE("NextSigned is the top 24 bits of Next, centred, on a 2^-23 grid") {
  wb::SplitMix64 a(42), b(42);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t raw = a.Next();
    const double expected = (static_cast<double>(raw >> 40) - 8388608.0) / 8388608.0;
    const double got = b.NextSigned();
    CHECK(got == expected);
    CHECK(static_cast<double>(static_cast<float>(got)) == got);  // exact in float
  }
}

TEST_CASE("generated data depends only on the seed, and input rows are prefix-stable") {
  const auto shape = ref::Stage1Shape();
  const auto w1 = ref::GenerateBlockWeights(shape, 5);
  const auto w2 = ref::GenerateBlockWeights(shape, 5);
  const auto w3 = ref::GenerateBlockWeights(shape, 6);
  CHECK(std::memcmp(w1.values.data(), w2.values.data(), w1.values.size() * sizeof(float)) == 0);
  CHECK(w1.values != w3.values);
  const auto four = ref::GenerateInputRows(9, 4, 512, 1.0);
  const auto seven = ref::GenerateInputRows(9, 7, 512, 1.0);
  CHECK(std::equal(four.begin(), four.end(), seven.begin()));
  // Norm weights in [0.75, 1.25), matrix entries in [-1/16, 1/16).
  CHECK(w1.values[0] >= 0.75f);
  CHECK(w1.values[0] < 1.25f);
  for (size_t i = 512; i < 4096; ++i) CHECK(std::fabs(w1.values[i]) <= 1.0f / 16);
}

TEST_CASE("a packed weight file round-trips") {
  const std::string path = TempPath("roundtrip.wbk");
  REQUIRE(wb::WritePackedWeights(path, Small()).ok());
  auto read = wb::ReadPackedWeights(path, "HINT");
  REQUIRE(read.ok());
  CHECK(read->shape == Small().shape);
  CHECK(read->offsets == Small().offsets);
  CHECK(read->seed == 99);
  CHECK(read->values == Small().values);
  CHECK(!std::filesystem::exists(path + ".partial"));
  std::remove(path.c_str());
}

TEST_CASE("a truncated packed file is refused at every length, naming the file") {
  const std::string path = TempPath("whole.wbk");
  REQUIRE(wb::WritePackedWeights(path, Small()).ok());
  const auto bytes = ReadBytes(path);
  const std::string cut = TempPath("cut.wbk");
  for (size_t n = 0; n < bytes.size(); ++n) {
    WriteBytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
    auto read = wb::ReadPackedWeights(cut, "HINT");
    CAPTURE(n);
    REQUIRE(!read.ok());
    CHECK(read.error().kind == wb::ErrorKind::kBadData);
    CHECK(read.error().message.rfind(cut + ": ", 0) == 0);
    CHECK(read.error().message.find("HINT") != std::string::npos);
  }
  WriteBytes(cut, std::vector<char>(bytes.begin(), bytes.end() - 3));
  CHECK(wb::ReadPackedWeights(cut, "HINT").error().message ==
        cut + ": field 'payload_floats' says 16 floats (64 bytes) but the file holds 61 bytes after the header "
              "(truncated). HINT");
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

TEST_CASE("corrupted packed files are refused with the field that is wrong") {
  const std::string path = TempPath("corrupt.wbk");
  REQUIRE(wb::WritePackedWeights(path, Small()).ok());
  const auto good = ReadBytes(path);
  auto corrupt = [&](size_t at, char value) {
    auto bytes = good;
    bytes[at] = value;
    WriteBytes(path, bytes);
    auto read = wb::ReadPackedWeights(path, "HINT");
    REQUIRE(!read.ok());
    return read.error().message;
  };
  CHECK(corrupt(0, 'X') == path + ": bytes 0-7 are not the magic \"WBPACKED\": this is not a workbook weight file. HINT");
  CHECK(corrupt(8, 2) == path + ": field 'version' is 2, this workbook reads version 1. HINT");
  CHECK(corrupt(48, 20).find("field 'offsets[1]' is 20") != std::string::npos);
  CHECK(corrupt(static_cast<size_t>(wb::kPackedHeaderBytes) + 5, 0x11).find("checksum") != std::string::npos);
  std::remove(path.c_str());
}

}  // namespace data_test
