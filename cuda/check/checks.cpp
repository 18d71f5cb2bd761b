// The table of checks: name, help, options (declared once; see check_args.h) and function.
#include "cuda/check/checks.h"

namespace leap::cuda::check {

std::vector<CheckSpec> all_checks() {
  std::vector<CheckSpec> out;
  out.push_back({"info", "device, driver, libraries, peak figures, what this build has", {},
                 run_info});
  return out;
}

}  // namespace leap::cuda::check
