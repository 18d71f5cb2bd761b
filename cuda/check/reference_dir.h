// ReferenceDir: the tensors benchmarks/gpu/op_reference.py writes (PyTorch's inputs and
// reference outputs): manifest.txt ("<name> <f32|i32> <count>"), shapes.txt
// ("<case> <key>=<value> ..."), and one raw little-endian file per tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace leap::cuda::check {

class ReferenceDir {
 public:
  static Expected<ReferenceDir> load(const std::string& dir);
  // A tensor, or a status naming the file and what op_reference.py should have written.
  Expected<std::vector<float>> f32(const std::string& name) const;
  Expected<std::vector<int32_t>> i32(const std::string& name) const;
  // A shape value of a case, e.g. dim("matmul", "N").
  Expected<double> dim(const std::string& case_name, const std::string& key) const;

 private:
  std::string dir_;
  std::map<std::string, std::pair<std::string, size_t>> manifest_;
  std::map<std::string, std::map<std::string, double>> shapes_;
};

}  // namespace leap::cuda::check
