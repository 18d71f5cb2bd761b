// Fuzz target: a task suite's JSONL text (tasks/*.jsonl, semi-trusted: written by people and
// generators, read by every command). Loading validates each line; a loaded suite promises that
// every shape evaluates under both param sets, so the target evaluates them to hold it to that.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tasks/expr.h"
#include "tasks/suite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto suite = leap::tasks::parse_suite(text, "fuzz.jsonl");
  if (!suite) return 0;
  for (const auto& task : suite->tasks)
    for (const auto& buffer : task.buffers)
      for (const auto& dim : buffer.shape)
        for (const auto* params : {&task.params, &task.cpu_params})
          if (!leap::tasks::eval_int_expr(dim, *params)) std::abort();  // the suite's invariant
  return 0;
}
