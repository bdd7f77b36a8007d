// The catalogue of stage-2 misconceptions: the ways a decoder step can misuse its cache.
//
// Contract: each entry (runner/diagnose/misconception.h) is one switch of the DecodeRecipe
// flipped, shown at call checkpoints. DecodeCandidates asks the driver what the failing
// checkpoint would hold under each relevant entry's recipe, and against which of the
// student's values to hold it (a cache written at the wrong row is seen in rows other than
// the checkpoint's own), and returns the entries that match. The stage-1 catalogue
// (misconceptions.h) still applies to everything a step shares with a block, except the
// entries one of these restates; the driver chooses among both catalogues' candidates by
// misconception.h's rule, after dropping any entry another call of the case contradicts.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/decode/call_checkpoints.h"
#include "reference/decode/decode_recipe.h"
#include "runner/compare/compare.h"
#include "runner/diagnose/misconception.h"
#include "runner/report/report.h"

namespace wb::stage02 {

using DecodeMisconception = Misconception<ref::DecodeRecipe, ref::CallCheckpoint>;

std::span<const DecodeMisconception> DecodeMisconceptions();

// Whether a block misconception is one a stage-2 entry restates (and so is not consulted).
bool RestatedByStage2(std::string_view blockId);

// What a mistaken recipe predicts: `expected` for the student's values `got`.
struct MistakenView {
  std::vector<float> got;
  std::vector<double> expected;
};

// Evaluates `checkpoint` under each relevant entry with `evaluate` (nullopt: the recipe
// predicts nothing different there) and returns those whose prediction the student's
// values match within `tolerance`, with their fit. `consider` (when set) may leave an entry
// out before it is evaluated.
std::vector<Candidate> DecodeCandidates(
    ref::CallCheckpoint checkpoint, const Tolerance& tolerance, const std::string& lessonPath,
    const std::function<std::optional<MistakenView>(const ref::DecodeRecipe&)>& evaluate,
    const std::function<bool(const DecodeMisconception&)>& consider = {});

}  // namespace wb::stage02
