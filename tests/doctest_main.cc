// doctest's main, linked into every test program but one (tests/course/course_check.cc has
// its own): a test file includes <doctest/doctest.h> and defines its test cases, nothing else.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
