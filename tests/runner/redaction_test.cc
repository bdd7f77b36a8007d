// A hidden case leaks nothing, whatever its driver puts in the report: RunCase redacts it
// after the driver returns, so a new stage's driver cannot forget to. The driver here fills
// every field with a secret and never redacts; no renderer may print a secret.
#include <doctest/doctest.h>

#include <string>

#include "runner/engine/check.h"
#include "runner/report/renderers.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace redaction_test {

namespace {

constexpr double kSecretValue = 123.456789;
constexpr double kSecretError = 0.00456789;

class LeakyDriver final : public wb::StageDriver {
 public:
  wb::Status Prepare(const wb::StageContext&) override { return wb::Status::Ok(); }
  double DefaultTimeLimit(const wb::CaseSpec&) const override { return 1; }
  wb::Expected<wb::CaseReport> RunCase(const wb::CaseSpec&, const wb::StageContext&) const override {
    wb::CaseReport r;
    r.name = "renamed-by-the-driver";
    r.hidden = false;  // a driver that forgets the case is hidden
    r.status = wb::CaseStatus::kFail;
    r.parameters = "T=77, seed SECRET-SEED";
    r.headline = "SECRET-HEADLINE";
    r.notes = {"SECRET-NOTE"};
    r.childOutput = "SECRET-OUTPUT";
    r.firstFailure = "q";
    wb::CheckpointReport cp;
    cp.name = "q";
    cp.shape = "77 x 512";
    cp.status = wb::CheckStatus::kFail;
    cp.atol = kSecretValue;
    cp.maxAbsError = kSecretError;  // the digits a student's outputs could choose
    cp.failing = 1234;
    cp.total = 77 * 512;
    cp.worst = wb::ElementDetail{.where = "SECRET-WHERE", .expected = kSecretValue, .got = kSecretValue, .gotNote = ""};
    cp.samples = {*cp.worst};
    cp.misconception = wb::MisconceptionHit{"SECRET-ID", "SECRET-SENTENCE", "SECRET-LESSON"};
    cp.observation = "SECRET-OBSERVATION";
    r.checkpoints = {cp};
    return r;
  }
};

}  // namespace

TEST_CASE("RunCase redacts a hidden case whatever the driver filled in") {
  const LeakyDriver driver;
  wb::CaseSpec spec;
  spec.name = "hidden-1";
  spec.hidden = true;
  auto report = wb::RunCase(driver, spec, wb::StageContext{});
  REQUIRE(report.ok());
  CHECK(report->name == "hidden-1");
  CHECK(report->hidden);
  wb::RunReport run;
  run.cases = {*report};
  for (const std::string& text :
       {wb::RenderText(run, {}), wb::RenderJson(run), wb::RenderJunit(run), wb::RenderGradescope(run)}) {
    CHECK(text.find("SECRET") == std::string::npos);
    CHECK(text.find("123.45") == std::string::npos);
    CHECK(text.find("77") == std::string::npos);
    CHECK(text.find("4567") == std::string::npos);  // only the error's power of ten is left
    CHECK(text.find("4.6") == std::string::npos);
    CHECK(text.find("1234") == std::string::npos);
  }
  CHECK(report->checkpoints[0].maxAbsError == doctest::Approx(1e-3));
  CHECK(wb::RenderText(run, {}).find("about 1e-03") != std::string::npos);
  // The same driver on a visible case keeps everything: the test above is not vacuous.
  spec.hidden = false;
  auto visible = wb::RunCase(driver, spec, wb::StageContext{});
  REQUIRE(visible.ok());
  run.cases = {*visible};
  CHECK(wb::RenderJson(run).find("SECRET-OBSERVATION") != std::string::npos);
  CHECK(wb::RenderText(run, {}).find("4.6e-03") != std::string::npos);
}

TEST_CASE("a hidden error keeps only its power of ten") {
  CHECK(wb::OrderOfMagnitude(0.0099) == doctest::Approx(1e-3));
  CHECK(wb::OrderOfMagnitude(0.001) == doctest::Approx(1e-3));
  CHECK(wb::OrderOfMagnitude(12345.0) == doctest::Approx(1e4));
  CHECK(wb::OrderOfMagnitude(1e-300) == wb::kSmallestHiddenError);
  CHECK(wb::OrderOfMagnitude(1e300) == wb::kLargestHiddenError);
  CHECK(wb::OrderOfMagnitude(0.0) == 0.0);
  // Two errors a student could tell apart in the digits are the same once redacted.
  CHECK(wb::OrderOfMagnitude(0.00123) == wb::OrderOfMagnitude(0.00987));
}

}  // namespace redaction_test
