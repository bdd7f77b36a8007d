// TensorView: shapes are row-major in both formats (GGUF ne reversed), rows are the innermost
// dimension, 3-D stacked experts index the outer dimension first, and DequantizeRows checks
// its arguments with messages naming the file and tensor.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "model/files/tensor_view.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_tensor_view {

using namespace wb::test;

namespace {

// Q8_0 block with scale 1 whose 32 codes are base, base+1, ... (mod 128).
Bytes Q8Block(int base) {
  Bytes block(34);
  block[0] = std::byte{0x00};
  block[1] = std::byte{0x3C};  // half 1.0
  for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<std::byte>((base + j) % 128);
  return block;
}

}  // namespace

TEST_CASE("a GGUF stacked-expert tensor: shape {E, R, C}, row r is expert r / R, row r % R") {
  // ne = [C=64, R=3, E=2]: 6 rows of 2 Q8_0 blocks; row r's blocks start at codes 10r and 10r+5.
  const uint64_t experts = 2, rows = 3, cols = 64;
  Bytes data;
  for (uint64_t r = 0; r < experts * rows; ++r) {
    for (int b = 0; b < 2; ++b) {
      const Bytes block = Q8Block(static_cast<int>(10 * r + 5 * static_cast<uint64_t>(b)));
      data.insert(data.end(), block.begin(), block.end());
    }
  }
  GgufBuilder builder;
  builder.Tensor("blk.0.ffn_up_exps.weight", 8, {cols, rows, experts}, data);
  const Bytes bytes = builder.Build();
  auto file = wb::GgufFile::Parse(View(bytes), "moe.gguf");
  REQUIRE(file.ok());
  auto view = wb::ViewTensor(*file, "blk.0.ffn_up_exps.weight");
  REQUIRE(view.ok());
  CHECK(view->shape == std::vector<uint64_t>{experts, rows, cols});
  CHECK(view->type == wb::TensorType::kQ8_0);
  CHECK(view->file == "moe.gguf");
  CHECK(view->RowLength() == cols);
  CHECK(view->RowCount() == experts * rows);
  CHECK(view->ElementCount() == experts * rows * cols);
  // Expert 1, row 2 is flat row 1 * 3 + 2 = 5.
  std::vector<float> out(cols);
  REQUIRE(wb::DequantizeRows(*view, 1 * rows + 2, 1, out).ok());
  for (uint64_t c = 0; c < cols; ++c) {
    const int code = static_cast<int>((10 * 5 + 5 * (c / 32) + c % 32) % 128);
    CHECK(out[c] == static_cast<float>(code));
  }
  // All of expert 0 at once.
  std::vector<float> expert0(rows * cols);
  REQUIRE(wb::DequantizeRows(*view, 0, rows, expert0).ok());
  CHECK(expert0[2 * cols + 33] == static_cast<float>((10 * 2 + 5 + 1) % 128));
  auto all = wb::DequantizeAll(*view);
  REQUIRE(all.ok());
  CHECK(all->size() == experts * rows * cols);
  CHECK((*all)[5 * cols] == out[0]);
}

TEST_CASE("a safetensors BF16 matrix keeps its row-major shape") {
  // 2 x 3 matrix of bf16 values 1..6.
  const std::vector<uint16_t> values = {0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0};
  const Bytes bytes = BuildSafetensors({{"model.embed_tokens.weight", "BF16", {2, 3}, BytesOf(values)},
                                        {"ids", "I64", {2}, Bytes(16)}});
  auto file = wb::SafetensorsFile::Parse(View(bytes), "model.safetensors");
  REQUIRE(file.ok());
  std::vector<wb::SafetensorsFile> files;
  files.push_back(std::move(*file));
  auto checkpoint = wb::SafetensorsCheckpoint::FromFiles(std::move(files), "hf-dir");
  REQUIRE(checkpoint.ok());
  auto view = wb::ViewTensor(*checkpoint, "model.embed_tokens.weight");
  REQUIRE(view.ok());
  CHECK(view->shape == std::vector<uint64_t>{2, 3});
  CHECK(view->type == wb::TensorType::kBF16);
  CHECK(view->file == "model.safetensors");
  std::vector<float> row(3);
  REQUIRE(wb::DequantizeRows(*view, 1, 1, row).ok());
  CHECK(row == std::vector<float>{4, 5, 6});
  CHECK(wb::ViewTensor(*checkpoint, "ids").error().message ==
        "model.safetensors: tensor 'ids' has dtype I64; weights must be F32, F16 or BF16");
  CHECK(wb::ViewTensor(*checkpoint, "lm_head.weight").error().message == "hf-dir: tensor 'lm_head.weight' is missing");
}

TEST_CASE("1-D and 0-d tensors are one row") {
  GgufBuilder builder;
  builder.Tensor("norm", 0, {4}, BytesOf(std::vector<float>{1, 2, 3, 4})).Tensor("scale", 0, {}, BytesOf(std::vector<float>{7}));
  const Bytes bytes = builder.Build();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  const auto norm = *wb::ViewTensor(*file, "norm");
  CHECK(norm.RowCount() == 1);
  CHECK(norm.RowLength() == 4);
  const auto scale = *wb::ViewTensor(*file, "scale");
  CHECK(scale.shape.empty());
  CHECK(scale.RowCount() == 1);
  CHECK(scale.RowLength() == 1);
  CHECK(*wb::DequantizeAll(scale) == std::vector<float>{7});
  CHECK(wb::ViewTensor(*file, "absent").error().message == "m.gguf: tensor 'absent' is missing");
}

TEST_CASE("DequantizeRows refuses rows out of range and wrongly sized output") {
  GgufBuilder builder;
  builder.Tensor("w", 0, {4, 3}, Bytes(48));
  const Bytes bytes = builder.Build();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  const auto view = *wb::ViewTensor(*file, "w");
  std::vector<float> out(8);
  CHECK(wb::DequantizeRows(view, 2, 2, out).error().message == "m.gguf: tensor 'w': 2 rows starting at row 2 do not fit in its 3 rows");
  CHECK(wb::DequantizeRows(view, 4, 0, {}).error().message == "m.gguf: tensor 'w': 0 rows starting at row 4 do not fit in its 3 rows");
  CHECK(wb::DequantizeRows(view, 1, ~0ull, out).error().message ==
        "m.gguf: tensor 'w': 18446744073709551615 rows starting at row 1 do not fit in its 3 rows");
  CHECK(wb::DequantizeRows(view, 0, 1, out).error().message ==
        "m.gguf: tensor 'w': 1 rows of 4 values need 4 floats, but the output holds 8");
  CHECK(wb::DequantizeRows(view, 3, 0, {}).ok());
  wb::TensorView handMade = view;
  handMade.data = handMade.data.first(40);
  CHECK(wb::DequantizeRows(handMade, 0, 1, std::span(out).first(4)).error().message ==
        "m.gguf: tensor 'w': holds 40 bytes, not 3 rows of 16 bytes");
}

TEST_CASE("DequantizeAll takes the dense K-quants whole and refuses a view of the wrong size") {
  // Q2_K packs 256 values in 84 bytes and Q3_K in 110: more than two values a byte.
  for (const uint32_t type : {10u, 11u}) {
    CAPTURE(type);
    const uint64_t blockBytes = type == 10 ? 84 : 110;
    GgufBuilder builder;
    builder.Tensor("w", type, {256, 2}, Bytes(2 * blockBytes));
    const Bytes bytes = builder.Build();
    auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
    REQUIRE(file.ok());
    const auto view = *wb::ViewTensor(*file, "w");
    const auto all = wb::DequantizeAll(view);
    REQUIRE_MESSAGE(all.ok(), all.error().message);
    CHECK(all->size() == 512);
    wb::TensorView cut = view;
    cut.data = cut.data.first(blockBytes * 2 - 1);
    CHECK(wb::DequantizeAll(cut).error().message ==
          fmt::format("m.gguf: tensor 'w': its shape does not match its {} bytes", blockBytes * 2 - 1));
  }
}

}  // namespace test_tensor_view
