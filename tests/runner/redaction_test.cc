// A hidden case leaks nothing, whatever its driver puts in the report: RunCase redacts it
// after the driver returns, so a new stage's driver cannot forget to. The driver here fills
// every field with a secret and never redacts; no renderer may print a secret.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>

#include "runner/engine/check.h"
#include "runner/report/renderers.h"

namespace {

constexpr double kSecretValue = 123.456789;

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
  }
  // The same driver on a visible case keeps everything: the test above is not vacuous.
  spec.hidden = false;
  auto visible = wb::RunCase(driver, spec, wb::StageContext{});
  REQUIRE(visible.ok());
  run.cases = {*visible};
  CHECK(wb::RenderJson(run).find("SECRET-OBSERVATION") != std::string::npos);
}
