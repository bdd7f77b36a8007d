// The catalogue of stage-2 misconceptions: the ways a decoder step can misuse its cache.
//
// Contract: each entry (runner/diagnose/misconception.h) is one switch of the DecodeRecipe
// flipped, shown at call checkpoints. DiagnoseDecode asks the driver what the failing checkpoint would hold under
// each relevant entry's recipe, and against which of the student's values to hold it (a
// cache written at the wrong row is seen in rows other than the checkpoint's own), and
// names the first entry that matches. The stage-1 catalogue (misconceptions.h) still
// applies to everything a step shares with a block; the driver consults it after this one.
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

// What a mistaken recipe predicts: `expected` for the student's values `got`.
struct MistakenView {
  std::vector<float> got;
  std::vector<double> expected;
};

// Evaluates `checkpoint` under each relevant entry with `evaluate` (nullopt: the recipe
// predicts nothing different there) and returns the first whose prediction the student's
// values match within `tolerance`.
std::optional<MisconceptionHit> DiagnoseDecode(
    ref::CallCheckpoint checkpoint, const Tolerance& tolerance, const std::string& lessonPath,
    const std::function<std::optional<MistakenView>(const ref::DecodeRecipe&)>& evaluate);

}  // namespace wb::stage02
