// What a bench reports of one piece of code's time: seconds a call, as the median of its runs
// with the fastest and slowest beside it (how noisy the machine was), and how many calls they
// rest on. Shared by the trusted helpers that time themselves (the yardsticks) and the
// runner's bench engine, which times the student's children from outside (bench_engine.h).
#pragma once

#include <nlohmann/json.hpp>

namespace wb {

struct CallTiming {
  double median = 0;  // seconds a call
  double fastest = 0;
  double slowest = 0;
  int runs = 0;
};

// How a yardstick prints a timing on its stdout, and how the runner reads it back (at() throws
// on a field that is missing: the runner checks the yardstick's output before it reads it).
inline nlohmann::json YardstickTimingJson(const CallTiming& t) {
  return {{"median", t.median}, {"fastest", t.fastest}, {"slowest", t.slowest}, {"runs", t.runs}};
}
inline CallTiming TimingFromYardstick(const nlohmann::json& j) {
  return {.median = j.at("median").get<double>(), .fastest = j.at("fastest").get<double>(),
          .slowest = j.at("slowest").get<double>(), .runs = j.at("runs").get<int>()};
}
// How a bench's JSON report gives one (`--format json`: a public contract).
inline nlohmann::json ReportTimingJson(const CallTiming& t) {
  return {{"median_seconds", t.median}, {"fastest_seconds", t.fastest}, {"slowest_seconds", t.slowest},
          {"runs", t.runs}};
}

}  // namespace wb
