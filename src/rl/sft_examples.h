// Material for the SFT warm start (docs/design.md, SFT mode): variants of a task's reference answer
// that should stay correct (so a small policy does not memorise one string per task), and
// broken variants whose real sandbox feedback, with the fix, makes a repair turn (so it learns
// to use feedback). Pure text transformations: every variant must be verified by the sandbox
// before use (an "augmented" one that fails is dropped, a "broken" one that passes is dropped).
#pragma once

#include <string>
#include <vector>

#include "common/rng.h"
#include "tasks/task.h"

namespace leap::rl {

struct AnswerVariant {
  std::string answer;  // a whole ```cuda block, as a completion would hold it
  std::string kind;    // what was changed: "rename_kernel", "block_size", "drop_guard", ...
};

// Up to `max_variants` distinct rewrites of the reference that keep its meaning when they
// verify: kernel renamed (unless rename_kernels is false: a suite whose prompts name the kernel,
// as the task families' do, should teach copying that name, not drawing a suffix), another block
// size in the launch lines, local variables renamed, two adjacent independent declarations
// swapped.
std::vector<AnswerVariant> augment_answer(const tasks::Task& task, const std::string& reference, Rng& rng,
                                          int max_variants, bool rename_kernels = true);

// Deliberately broken rewrites, one per kind that applies: no code fence (FORMAT_ERROR), a
// missing semicolon (COMPILE_ERROR), a misspelled kernel in a launch line, a grid rounded down
// instead of up (wrong on ragged sizes), a dropped bounds guard.
std::vector<AnswerVariant> break_answer(const tasks::Task& task, const std::string& reference);

}  // namespace leap::rl
