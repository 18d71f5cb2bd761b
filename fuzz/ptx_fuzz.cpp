// Fuzz target: PTX text, as NVRTC makes it from a policy's kernel (the seeds are real NVRTC
// output; the mutations stand for compiler versions, options and kernels we have not seen).
// Parsing and decoding (module layout, registers, handlers, operand binding) must end in a
// module or a Status naming the line, never a crash; nothing is run.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sandbox/ptx/interpreter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = leap::sandbox::ptx::Module::parse(text);
  if (module)
    for (const auto& kernel : module->kernels()) (void)module->find_kernel(kernel.name);
  return 0;
}
