// Error kinds fix the exit status every command ends with (common/expected.h), and a failure
// of the workbook itself is never reported as the student's: the message says so.
#include <doctest/doctest.h>

#include "common/expected.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace errors_test {

TEST_CASE("each error kind has the exit status the design promises") {
  CHECK(wb::kExitPass == 0);
  CHECK(wb::kExitFail == 1);
  CHECK(wb::ExitStatusOf(wb::ErrorKind::kBadData) == 2);
  CHECK(wb::ExitStatusOf(wb::ErrorKind::kBadUsage) == 2);
  CHECK(wb::ExitStatusOf(wb::ErrorKind::kSystem) == 3);
  CHECK(wb::ExitStatusOf(wb::ErrorKind::kInternal) == 3);
}

TEST_CASE("an Expected holds a value or an error with its kind and message") {
  wb::Expected<int> value = 7;
  REQUIRE(value.ok());
  CHECK(*value == 7);
  wb::Expected<int> error = wb::InternalError("the harness refused the region");
  REQUIRE(!error.ok());
  CHECK(error.error().kind == wb::ErrorKind::kInternal);
  CHECK(error.error().message == "the harness refused the region");
  CHECK(!error.status().ok());
  CHECK(error.status().error().kind == wb::ErrorKind::kInternal);
}

}  // namespace errors_test
