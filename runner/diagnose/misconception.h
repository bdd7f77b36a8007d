// One misconception: a mistake the runner can recognise by name, as one switch of a
// reference recipe flipped away from the model the workbook teaches.
//
// Contract: an entry names the checkpoints where the mistake first shows, one plain
// sentence ("{buffer}" stands for the checkpoint's name) and the lesson heading that
// explains it. Each catalogue (the block's in misconceptions.h, each stage's own beside its
// driver) is a list of these for its recipe and its checkpoints; Hit words a match.
//
// Naming rule, the same in every stage (Choose): a buffer's mistake is named only when the
// buffer matches that entry's prediction and no other entry's, or matches it clearly better
// (kClearlyCloser times closer, in units of the tolerance, than any other entry it matches
// only loosely). Two entries that predict the same values in a case (RoPE left out, and RoPE with
// row t in a one-token call) are two guesses, and the runner does not guess: it names
// neither and says which it cannot tell apart. A stage whose case has several calls also
// drops an entry that some other call of the case contradicts, before choosing.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "../compare/compare.h"
#include "../report/report.h"

namespace wb {

template <typename Recipe, typename Checkpoint>
struct Misconception {
  std::string_view id;
  std::vector<Checkpoint> showsAt;
  std::string_view sentence;  // with "{buffer}" where the checkpoint's name goes
  std::string_view lessonAnchor;
  std::function<void(Recipe&)> flip;
  // The id of another catalogue's entry (the block's) that predicts exactly what this entry
  // predicts in this stage, so the stage consults only this one (say, stage 2's reading
  // every row of the call is stage 1's missing causal mask); empty: none.
  std::string_view restates = {};

  bool ShowsAt(Checkpoint c) const { return std::find(showsAt.begin(), showsAt.end(), c) != showsAt.end(); }

  // The taught recipe with this entry's switch flipped.
  Recipe Flipped() const {
    Recipe recipe;
    flip(recipe);
    return recipe;
  }

  // The report's words for a buffer that matches this mistake.
  MisconceptionHit Hit(std::string_view buffer, std::string_view lessonPath) const {
    std::string text(sentence);
    const std::string placeholder = "{buffer}";
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at)) {
      text.replace(at, placeholder.size(), buffer);
    }
    return MisconceptionHit{std::string(id), text, fmt::format("{}#{}", lessonPath, lessonAnchor)};
  }
};

// An entry the buffer matches, and how closely: the largest difference between the buffer
// and the entry's prediction, in units of the checkpoint's tolerance (FitOf).
struct Candidate {
  MisconceptionHit hit;
  double fit = 0;
};

// What a diagnosis concluded: the one mistake named, or the entries it could not tell apart.
struct Recognition {
  std::optional<MisconceptionHit> hit;
  std::vector<std::string> tied;  // ids, when several entries match about equally well
};

// How much closer the named entry must be than every other match, and how loose that other
// match must be: two entries that both fit within half the tolerance predict the same
// values as far as this buffer can tell.
inline constexpr double kClearlyCloser = 10.0;
inline constexpr double kLooseMatch = 0.5;

// max |got - predicted| / (atol + rtol |predicted|) over the elements, with atol from the
// prediction's RMS, as Matches (compare.h) measures: <= 1 is a match. A non-finite value
// counts 0 where Matches accepts it and infinity where it does not.
double FitOf(std::span<const float> got, std::span<const double> predicted, const Tolerance& tolerance);

// The naming rule above, over every entry the buffer matches.
Recognition Choose(std::vector<Candidate> candidates);

}  // namespace wb
