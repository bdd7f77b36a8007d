// A CallTiming (call_timing.h) as JSON: the form a yardstick prints it in and the runner reads
// back, and the form a bench's report gives it. Apart from call_timing.h so that the bench
// children, which include that, do not compile nlohmann/json.
#pragma once

#include <nlohmann/json.hpp>

#include "runner/stages/call_timing.h"

namespace wb {

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
