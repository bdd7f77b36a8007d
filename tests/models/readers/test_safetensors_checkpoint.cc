// SafetensorsCheckpoint: a directory with model.safetensors, a sharded directory with an
// index, and every way the index and shards can disagree.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/files/safetensors.h"
#include "tests/models/readers/temp_dir.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_safetensors_checkpoint {

using namespace wb::test;
using wb::SafetensorsCheckpoint;

namespace {

Bytes Shard(const std::vector<std::string>& names) {
  std::vector<SafetensorsSpec> specs;
  for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], "F32", {2}, Bytes(8, std::byte(i))});
  return BuildSafetensors(specs);
}

const char* kTwoShardIndex = R"({"metadata": {"total_size": 24},
  "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                 "c": "model-00002-of-00002.safetensors"}})";

}  // namespace

TEST_CASE("a directory with model.safetensors") {
  TempDir dir;
  dir.Write("model.safetensors", Shard({"x", "y"}));
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path().string());
  REQUIRE(checkpoint.ok());
  CHECK(checkpoint->source() == dir.path().string());
  CHECK(checkpoint->indexPath().empty());
  CHECK(checkpoint->shards().size() == 1);
  CHECK(checkpoint->TensorNames() == std::vector<std::string>{"x", "y"});
  const auto found = checkpoint->Find("y");
  REQUIRE(found.tensor != nullptr);
  CHECK(found.file->name() == dir / "model.safetensors");
  CHECK(static_cast<int>(found.tensor->data[0]) == 1);
  CHECK(checkpoint->Find("z").tensor == nullptr);
}

TEST_CASE("a sharded directory: every tensor is found in its shard") {
  TempDir dir;
  dir.Write("model-00001-of-00002.safetensors", Shard({"a", "b"}));
  dir.Write("model-00002-of-00002.safetensors", Shard({"c"}));
  dir.Write("model.safetensors.index.json", std::string_view(kTwoShardIndex));
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path().string());
  REQUIRE(checkpoint.ok());
  CHECK(checkpoint->indexPath() == dir / "model.safetensors.index.json");
  CHECK(checkpoint->shards().size() == 2);
  CHECK(checkpoint->TensorNames() == std::vector<std::string>{"a", "b", "c"});
  CHECK(checkpoint->Find("c").file->name() == dir / "model-00002-of-00002.safetensors");
  SafetensorsCheckpoint moved = std::move(*checkpoint);  // views survive a move
  CHECK(moved.Find("b").tensor->data.size() == 8);
}

TEST_CASE("an index that disagrees with its shards") {
  TempDir dir;
  dir.Write("model-00001-of-00002.safetensors", Shard({"a", "b"}));
  dir.Write("model-00002-of-00002.safetensors", Shard({"c", "b"}));
  const std::string index = dir.Write("model.safetensors.index.json", std::string_view(kTwoShardIndex));
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir.path().string()).error().message ==
        dir / "model-00002-of-00002.safetensors" + ": tensor 'b' is also in " + dir / "model-00001-of-00002.safetensors");

  dir.Write("model-00002-of-00002.safetensors", Shard({"d"}));
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir.path().string()).error().message ==
        index + ": tensor 'c' is mapped to model-00002-of-00002.safetensors, but that shard does not hold it");

  dir.Write("model-00002-of-00002.safetensors", Shard({"c"}));
  dir.Write("model.safetensors.index.json",
            std::string_view(R"({"weight_map": {"a": "model-00002-of-00002.safetensors",
                "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})"));
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir.path().string()).error().message ==
        index + ": tensor 'a' is mapped to model-00002-of-00002.safetensors, but it is in " +
            dir / "model-00001-of-00002.safetensors");

  std::filesystem::remove(dir / "model-00001-of-00002.safetensors");
  dir.Write("model.safetensors.index.json", std::string_view(kTwoShardIndex));
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir.path().string()).error().message ==
        dir / "model-00001-of-00002.safetensors" + ": no such file or directory");
}

TEST_CASE("the index file itself: weight_map required, shard names stay inside the directory") {
  const auto parse = [](std::string_view json) {
    auto index = SafetensorsCheckpoint::ParseIndex(json, "index.json");
    return index.ok() ? std::string("(parsed)") : index.error().message;
  };
  CHECK(parse(R"({"weight_map": {"w": "model.safetensors"}})") == "(parsed)");
  CHECK(parse(R"({"weight_map": {"w": "sub/model.safetensors"}})") == "(parsed)");
  CHECK(parse(R"({"metadata": {}})") == "index.json: field 'weight_map' is missing");
  CHECK(parse(R"({"weight_map": []})") == "index.json: field 'weight_map' is not an object");
  CHECK(parse(R"({"weight_map": {}})") == "index.json: field 'weight_map' lists no tensors");
  CHECK(parse(R"({"weight_map": {"w": 3}})") ==
        "index.json: field 'weight_map' entry 'w' is a number, expected a file name");
  CHECK(parse(R"({"weight_map": {"w": "../secret.safetensors"}})") ==
        "index.json: field 'weight_map' entry 'w': shard \"../secret.safetensors\" is not a file name inside the "
        "checkpoint directory");
  CHECK(parse(R"({"weight_map": {"w": "/etc/x.safetensors"}})") ==
        "index.json: field 'weight_map' entry 'w': shard \"/etc/x.safetensors\" is not a file name inside the "
        "checkpoint directory");
  CHECK(parse(R"({"weight_map": {"w": "a/../../x"}})").find("is not a file name inside") != std::string::npos);
  CHECK(parse("[]") == "index.json: the JSON is not an object");
  CHECK(parse("{").rfind("index.json: invalid JSON: [json.exception.parse_error.101]", 0) == 0);
}

TEST_CASE("directories without weights, and paths that are not directories") {
  TempDir dir;
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir.path().string()).error().message ==
        dir.path().string() + ": has neither model.safetensors nor model.safetensors.index.json");
  const std::string file = dir.Write("model.safetensors", Shard({"x"}));
  CHECK(SafetensorsCheckpoint::OpenDirectory(file).error().message == file + ": is not a directory");
  CHECK(SafetensorsCheckpoint::OpenDirectory(dir / "nope").error().message == dir / "nope" + ": no such file or directory");
  auto single = SafetensorsCheckpoint::OpenFile(file);
  REQUIRE(single.ok());
  CHECK(single->source() == file);
  const std::string broken = dir.Write("broken.safetensors", Bytes(4));
  CHECK(SafetensorsCheckpoint::OpenFile(broken).error().message ==
        broken + ": header field 'N' (header length): needs 8 bytes, but the file has 4 (truncated)");
}

}  // namespace test_safetensors_checkpoint
