// A task of a suite (design.md, Task suites): what the policy must write, the buffers its kernel
// reads and writes, the sizes, and a trusted reference answer. Loaded from JSONL by suite.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace leap::tasks {

enum class DType { kF32, kF16, kBF16, kI32, kI64, kU8 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", ...

enum class Role { kIn, kOut, kInOut };

struct Init {
  enum class Kind { kNormal, kUniform, kRandint, kZeros, kOnes } kind = Kind::kNormal;
  double a = 0, b = 1;  // uniform(a,b): [a, b); randint(a,b): integers in [a, b], both inclusive
};

struct BufferSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::string> shape;  // expressions over integer params: ["n"], ["m", "k"]
  Role role = Role::kIn;
  Init init;
};

// A param is an integer (a size; usable in launch, shape and scratch expressions) or a float
// (a scalar such as alpha; only passed as a kernel argument).
using ParamValue = std::variant<int64_t, double>;
using Params = std::map<std::string, ParamValue>;

enum class Split { kTrain, kHeldout };

struct Task {
  std::string id;  // "L1/relu_mul"
  int level = 1;
  std::string family;  // "elementwise", "reduction", ...
  std::string prompt;
  Params params;      // GPU sizes
  Params cpu_params;  // interpreter sizes: small, not multiples of common block sizes
  std::vector<BufferSpec> buffers;
  std::string reference;  // a trusted answer in the answer format (a ```cuda block)
  double atol = 1e-5, rtol = 1e-5;
  Split split = Split::kTrain;
  // Held-out tasks only: why this one is not a new combination of parts after all (the suite
  // generator's audit: a held-out pair that train shows another way, a part that does nothing).
  // Empty for a task the split holds out cleanly; `leap eval` reports those apart.
  std::vector<std::string> seen_in_train;
};

}  // namespace leap::tasks
