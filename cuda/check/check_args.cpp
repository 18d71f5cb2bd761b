// CheckArgs: `--key=value` / `--key value` parsing against a declared table.
#include "cuda/check/check_args.h"

#include <cstdlib>

#include "common/check.h"

namespace leap::cuda::check {

Expected<CheckArgs> CheckArgs::parse(const std::vector<ArgSpec>& specs, int argc, char** argv,
                                     int first) {
  CheckArgs args;
  for (const auto& s : specs) args.values_[s.key] = s.default_value;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      return invalid_input("unexpected argument '" + a + "': options are --key=value\n" +
                           describe_args(specs));
    }
    std::string key = a.substr(2), value;
    auto eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return invalid_input("option --" + key + " needs a value");
    }
    if (!args.values_.count(key)) {
      return invalid_input("unknown option --" + key + "; this check takes:\n" +
                           describe_args(specs));
    }
    args.values_[key] = value;
  }
  return args;
}

const std::string& CheckArgs::str(const std::string& key) const {
  auto it = values_.find(key);
  LEAP_CHECK(it != values_.end(), "option " << key << " was not declared");
  return it->second;
}

Expected<long long> CheckArgs::integer(const std::string& key) const {
  const std::string& v = str(key);
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') {
    return invalid_input("--" + key + "=" + v + " is not an integer");
  }
  return x;
}

Expected<double> CheckArgs::number(const std::string& key) const {
  const std::string& v = str(key);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') return invalid_input("--" + key + "=" + v + " is not a number");
  return x;
}

std::string describe_args(const std::vector<ArgSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    out += "  --" + s.key + " (default " + (s.default_value.empty() ? "none" : s.default_value) +
           "): " + s.help + "\n";
  }
  return out;
}

}  // namespace leap::cuda::check
