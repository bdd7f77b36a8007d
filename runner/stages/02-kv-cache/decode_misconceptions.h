// The catalogue of stage-2 misconceptions: the ways a decoder step can misuse its cache.
//
// Contract: each entry is one switch of the DecodeRecipe flipped away from the model the
// workbook teaches, the call checkpoints where that mistake first shows, one plain
// sentence ("{buffer}" is replaced by the checkpoint's name) and the lesson paragraph that
// explains it. DiagnoseDecode asks the driver what the failing checkpoint would hold under
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
#include "runner/report/report.h"

namespace wb::stage02 {

struct DecodeMisconception {
  std::string_view id;
  std::vector<ref::CallCheckpoint> showsAt;
  std::string_view sentence;  // with "{buffer}" where the checkpoint's name goes
  std::string_view lessonAnchor;
  std::function<void(ref::DecodeRecipe&)> flip;
};

std::span<const DecodeMisconception> DecodeMisconceptions();

// The recipe with one misconception's switch flipped.
ref::DecodeRecipe Flipped(const DecodeMisconception& m);

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
