// The catalogue of block misconceptions: mistakes the runner can recognise by name.
//
// Contract: each entry (misconception.h) is one switch of the block recipe flipped.
// Diagnose evaluates the failing checkpoint with each relevant entry's recipe, on the
// student's own upstream buffers, and names the first entry the student's buffer matches.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../reference/block/block.h"
#include "../compare/compare.h"
#include "../report/report.h"
#include "misconception.h"

namespace wb {

using BlockMisconception = Misconception<ref::BlockRecipe, ref::Checkpoint>;

std::span<const BlockMisconception> BlockMisconceptions();

// Evaluates `checkpoint` under each relevant misconception with `compute` (which runs the
// reference operator on the student's upstream buffers under a recipe) and returns the
// first whose result `got` matches within `tolerance`.
std::optional<MisconceptionHit> Diagnose(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute);

}  // namespace wb
