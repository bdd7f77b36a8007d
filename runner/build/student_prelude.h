// The standard headers a stage file usually includes, compiled once per stage when the
// workbook is built (a GCC precompiled header, student_prelude_stageNN.h.gch) and given to
// the compiler with -include, so that a student's edit→report is not spent re-parsing
// <cmath> and <vector>: most of a stage file's compile time is those headers
// (https://gcc.gnu.org/onlinedocs/gcc/Precompiled-Headers.html).
//
// Contract: only standard headers, which a stage file may include again at no cost (their
// include guards); nothing the workbook defines. Where GCC cannot use the precompiled form
// (another compiler, other flags), it reads this file instead, with the same meaning. An
// include guard, not #pragma once: GCC warns of the pragma in a header compiled on its own.
#ifndef WB_STUDENT_PRELUDE_H
#define WB_STUDENT_PRELUDE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#endif  // WB_STUDENT_PRELUDE_H
