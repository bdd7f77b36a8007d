// One misconception: a mistake the runner can recognise by name, as one switch of a
// reference recipe flipped away from the model the workbook teaches.
//
// Contract: an entry names the checkpoints where the mistake first shows, one plain
// sentence ("{buffer}" stands for the checkpoint's name) and the lesson heading that
// explains it. Each catalogue (the block's in misconceptions.h, each stage's own beside its
// driver) is a list of these for its recipe and its checkpoints; Hit words a match.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "../report/report.h"

namespace wb {

template <typename Recipe, typename Checkpoint>
struct Misconception {
  std::string_view id;
  std::vector<Checkpoint> showsAt;
  std::string_view sentence;  // with "{buffer}" where the checkpoint's name goes
  std::string_view lessonAnchor;
  std::function<void(Recipe&)> flip;

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

}  // namespace wb
