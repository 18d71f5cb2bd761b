// The check program's arguments: `leap_gpu_check CHECK [--key=value ...]`. Each check declares
// its keys with a default and a help line in one table, so `--help` and the parser agree; an
// unknown key or a value that is not a number where one is needed is an error (exit code 2).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace leap::cuda::check {

struct ArgSpec {
  std::string key;
  std::string default_value;
  std::string help;
};

class CheckArgs {
 public:
  // Parses argv[first..] against `specs`.
  static Expected<CheckArgs> parse(const std::vector<ArgSpec>& specs, int argc, char** argv,
                                   int first);
  const std::string& str(const std::string& key) const;
  Expected<long long> integer(const std::string& key) const;
  Expected<double> number(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
};

std::string describe_args(const std::vector<ArgSpec>& specs);

}  // namespace leap::cuda::check
