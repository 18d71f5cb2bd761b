// Task suites (docs/design.md, Task suites): loading and validating a JSONL file, one task a line,
// and choosing tasks from it. Invariants of a loaded Suite: ids are unique; every shape
// evaluates to a positive element count under both `params` and `cpu_params` (which declare the
// same names); every buffer's init suits its dtype and role; at least one buffer is written;
// the reference holds a ```cuda block with a `// launch:` line. So later stages (input
// generation, the sandbox) may rely on these without re-checking. Every load error names the
// file, the line and the field, and says how to fix it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "tasks/task.h"

namespace leap::tasks {

struct Suite {
  std::string path;         // as given to load_suite (or the name given to parse_suite)
  std::vector<Task> tasks;  // file order

  // The task with this id, or nullptr.
  const Task* find(std::string_view id) const;
};

// Reads and validates a suite file. Errors are invalid_input ("FILE:LINE: field 'x': ... ")
// or not_found when the file cannot be opened.
Expected<Suite> load_suite(const std::string& path);
// The same from text; `source_name` stands for the file in messages.
Expected<Suite> parse_suite(std::string_view text, const std::string& source_name);

// The task with this id, or not_found naming the suite and the nearest id.
Expected<const Task*> find_task(const Suite& suite, std::string_view id);
// Tasks of one split, in file order (training draws only kTrain).
std::vector<const Task*> select_tasks(const Suite& suite, Split split);
// The same tasks as indices into suite.tasks (what RL's task sampler draws from).
std::vector<int> task_indices(const Suite& suite, Split split);

// Names as the JSONL spells them, and their parsers (invalid_input saying what is allowed).
const char* split_name(Split s);
const char* role_name(Role r);
std::string init_name(const Init& init);  // "normal", "uniform(-1,1)", ...
Expected<DType> parse_dtype(std::string_view text);
Expected<Role> parse_role(std::string_view text);
Expected<Split> parse_split(std::string_view text);
Expected<Init> parse_init(std::string_view text);

// Re-checks a task that was built in code (tests, generators); load_suite applies it to every
// line. The message names the field but not the file.
Status validate_task(const Task& task);

// `tasks.suite` (alias --suite): the suite file that train, eval, check and tasks read.
struct TasksConfig {
  std::string suite = "tasks/level1.jsonl";
  void declare(OptionSet& opts);
};

}  // namespace leap::tasks
