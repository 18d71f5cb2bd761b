// Output comparison (docs/design.md, Verification): every `out`/`inout` element within
// atol + rtol·|reference|, NaN where the reference is finite is a mismatch, and outputs that
// are all (near) zero pass only if the reference's are too. Runs in the supervisor, after the
// candidate's worker has finished: the worker never holds the reference's outputs.
#pragma once

#include <string>
#include <vector>

#include "tasks/inputs.h"
#include "tasks/task.h"

namespace leap::sandbox {

struct Comparison {
  bool ok = true;
  double max_abs_err = 0;  // over every compared element (inf when a NaN stands for a number)
  std::string message;     // for the policy: buffer, count, first mismatch with its index
};

// `candidate` and `reference` hold the same buffers in the same order (JobReport::outputs).
// show_values: the message gives the first mismatch's value and the expected one, and the max
// abs error. Off for a trial whose expected values must not reach the policy (verifier.cpp: the
// trials after the first), since a small output's expected values are then learnable.
Comparison compare_outputs(const tasks::Task& task, const tasks::Params& params,
                           const std::vector<tasks::BufferData>& candidate,
                           const std::vector<tasks::BufferData>& reference, bool show_values = true);

}  // namespace leap::sandbox
