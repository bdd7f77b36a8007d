// What a bench reports of one piece of code's time: seconds a call, as the median of its runs
// with the fastest and slowest beside it (how noisy the machine was), and how many calls they
// rest on. Shared by the trusted helpers that time themselves (the yardsticks) and the
// runner's bench engine, which times the student's children from outside (bench_engine.h).
#pragma once

namespace wb {

struct CallTiming {
  double median = 0;  // seconds a call
  double fastest = 0;
  double slowest = 0;
  int runs = 0;
};

}  // namespace wb
