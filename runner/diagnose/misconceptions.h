// The catalogue of block misconceptions: mistakes the runner can recognise by name.
//
// Contract: each entry (misconception.h) is one switch of the block recipe flipped.
// Diagnose evaluates the failing checkpoint with each relevant entry's recipe, on the
// student's own upstream buffers, and names an entry by misconception.h's rule (Choose).
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
// entries whose result `got` matches within `tolerance`, with their fit. `consider` (when
// set) may leave an entry out: one that another stage restates, or that another call of the
// case contradicts.
std::vector<Candidate> BlockCandidates(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute,
    const std::function<bool(const BlockMisconception&)>& consider = {});

// Stage 1's diagnosis: Choose over BlockCandidates.
Recognition Diagnose(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute);

}  // namespace wb
