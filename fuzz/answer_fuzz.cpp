// Fuzz target: a policy completion, the least trusted input of all. Extracts the last ```cuda
// block, checks it holds device code only, splits its `// launch:` and `// scratch:` lines, and
// evaluates them over a small task's params and cpu_params (launch_plan.cpp), where the sizes
// and dimensions of a hostile answer must be refused before anything is allocated.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sandbox/answer.h"
#include "sandbox/launch_plan.h"

namespace {

leap::tasks::Task make_task() {
  using leap::tasks::DType;
  using leap::tasks::Role;
  leap::tasks::Task t;
  t.id = "F/axpy";
  t.params = {{"n", int64_t{1} << 24}, {"m", int64_t{4096}}, {"alpha", 0.5}};
  t.cpu_params = {{"n", int64_t{4099}}, {"m", int64_t{7}}, {"alpha", 0.5}};
  t.buffers = {{"x", DType::kF32, {"n"}, Role::kIn, {}},
               {"idx", DType::kI32, {"m"}, Role::kIn, {}},
               {"y", DType::kF32, {"n"}, Role::kOut, {}}};
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const leap::tasks::Task task = make_task();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto answer = leap::sandbox::parse_answer(text);
  if (!answer) return 0;
  for (const auto* params : {&task.params, &task.cpu_params})
    (void)leap::sandbox::make_launch_plan(*answer, task, *params, leap::sandbox::PlanLimits{});
  return 0;
}
