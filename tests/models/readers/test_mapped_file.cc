// MappedFile: maps regular files read-only; names the path for every refusal; moves keep the
// mapping where it is.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "model/files/mapped_file.h"
#include "tests/models/readers/temp_dir.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_mapped_file {

using wb::MappedFile;

TEST_CASE("a file's bytes are mapped, and a move keeps them at the same address") {
  wb::test::TempDir dir;
  const std::string path = dir.Write("data.bin", std::string_view("hello, mapping"));
  auto mapped = MappedFile::Open(path);
  REQUIRE(mapped.ok());
  CHECK(mapped->path() == path);
  REQUIRE(mapped->bytes().size() == 14);
  const std::byte* address = mapped->bytes().data();
  CHECK(static_cast<char>(mapped->bytes()[7]) == 'm');
  MappedFile moved = std::move(*mapped);
  CHECK(moved.bytes().data() == address);
  CHECK(mapped->bytes().empty());  // the moved-from object owns nothing
  MappedFile assigned = std::move(moved);
  CHECK(assigned.bytes().data() == address);
  CHECK(static_cast<char>(assigned.bytes()[13]) == 'g');
}

TEST_CASE("missing paths, directories and empty files are errors naming the path") {
  wb::test::TempDir dir;
  const std::string missing = dir / "missing.gguf";
  CHECK(MappedFile::Open(missing).error().message == missing + ": no such file or directory");
  CHECK(MappedFile::Open(missing).error().kind == wb::ErrorKind::kBadUsage);
  CHECK(MappedFile::Open(dir.path().string()).error().message == dir.path().string() + ": is a directory, expected a file");
  const std::string empty = dir.Write("empty.gguf", std::string_view(""));
  CHECK(MappedFile::Open(empty).error().message == empty + ": the file is empty");
  CHECK(MappedFile::Open(empty).error().kind == wb::ErrorKind::kBadData);
  CHECK(MappedFile::Open("/dev/null").error().message == "/dev/null: is not a regular file");
}

TEST_CASE("in memory, a file's bytes are a copy of their own, read whole at Open") {
  wb::test::TempDir dir;
  // More than one page and not a whole number of them, so the read loop's end is exercised.
  std::string text(3 * 4096 + 123, '\0');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
  const std::string path = dir.Write("weights.bin", std::string_view(text));
  auto copy = MappedFile::Open(path, wb::Residence::kInMemory);
  auto mapped = MappedFile::Open(path);
  REQUIRE(copy.ok());
  REQUIRE(mapped.ok());
  REQUIRE(copy->bytes().size() == text.size());
  CHECK(std::string_view(reinterpret_cast<const char*>(copy->bytes().data()), text.size()) == text);
  CHECK(copy->bytes().data() != mapped->bytes().data());
  // The file rewritten in place: the mapping shows the new bytes, the copy keeps the old ones.
  dir.Write("weights.bin", std::string_view(std::string(text.size(), 'Z')));
  CHECK(static_cast<char>(mapped->bytes()[5000]) == 'Z');
  CHECK(static_cast<char>(copy->bytes()[5000]) == text[5000]);
  // A move keeps the copy where it is, as it keeps a mapping.
  const std::byte* address = copy->bytes().data();
  MappedFile moved = std::move(*copy);
  CHECK(moved.bytes().data() == address);
}

TEST_CASE("in memory, refusals are the mapped ones") {
  wb::test::TempDir dir;
  const std::string missing = dir / "missing.gguf";
  CHECK(MappedFile::Open(missing, wb::Residence::kInMemory).error().message == missing + ": no such file or directory");
  const std::string empty = dir.Write("empty.gguf", std::string_view(""));
  CHECK(MappedFile::Open(empty, wb::Residence::kInMemory).error().message == empty + ": the file is empty");
}

}  // namespace test_mapped_file
