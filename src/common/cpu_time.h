// CPU time of this process and of every process it started: the budget unit of the paper
// comparison (a shared machine's wall clock says little). getrusage gives this process and its
// children that have been waited for; children still running (the sandbox's worker processes)
// are read from /proc, found through /proc/self/task/*/children.
#pragma once

namespace leap {

// User + system seconds of this process, its reaped children and its live children (and
// theirs, as far as they reaped them).
double process_tree_cpu_seconds();

}  // namespace leap
