// The reference decoder's RoPE frequencies are the model library's (model/config/
// rope_frequencies.h): the reference and the stage-5 decoder read one table.
#pragma once

#include "model/config/rope_frequencies.h"

namespace ref {

using wb::model::ComputeRopeFrequencies;
using wb::model::RopeFrequencies;

}  // namespace ref
