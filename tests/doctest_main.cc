// doctest's main, linked into every test program but one (tests/course/course_check.cc has its
// own): a test file includes <doctest/doctest.h> and defines its test cases, nothing else.
//
// The test files of a folder may share one program, compiled as one unity build, each file run
// by a meson test of its own with --source-file=*NAME.cc. A run whose filters select no test
// case fails, so that a filter that names a file the program does not hold is never a pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

// What doctest counted at the end of the run: the test cases that passed the filters.
struct Selection {
  bool ran = false;
  unsigned selected = 0;
};
Selection selection;

struct SelectionListener : doctest::IReporter {
  explicit SelectionListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selection.ran = true;
    selection.selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
DOCTEST_REGISTER_LISTENER("selection", 1, SelectionListener);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --count, --list-test-cases, ...
  if (selection.ran && selection.selected == 0) {
    std::fprintf(stderr, "%s: no test case matched the filters given; a test that runs nothing is no pass\n",
                 argc > 0 ? argv[0] : "test");
    return 1;
  }
  return result;
}
