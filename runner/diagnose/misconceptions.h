// The catalogue of block misconceptions: mistakes the runner can recognise by name.
//
// Contract: each entry is one switch of the reference recipe flipped away from the model
// the workbook teaches, the checkpoints where that mistake first shows, one plain sentence
// ("{buffer}" is replaced by the checkpoint's name) and the lesson paragraph that explains
// it. Diagnose evaluates the failing checkpoint with each relevant entry's recipe, on the
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

namespace wb {

struct BlockMisconception {
  std::string_view id;
  std::vector<ref::Checkpoint> showsAt;
  std::string_view sentence;  // with "{buffer}" where the checkpoint's name goes
  std::string_view lessonAnchor;
  std::function<void(ref::BlockRecipe&)> flip;
};

std::span<const BlockMisconception> BlockMisconceptions();

// The recipe with one misconception's switch flipped.
ref::BlockRecipe Flipped(const BlockMisconception& m);

// Evaluates `checkpoint` under each relevant misconception with `compute` (which runs the
// reference operator on the student's upstream buffers under a recipe) and returns the
// first whose result `got` matches within `tolerance`.
std::optional<MisconceptionHit> Diagnose(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute);

}  // namespace wb
