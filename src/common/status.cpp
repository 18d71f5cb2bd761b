// Maps status codes to process exit codes: bad user input is 2, everything else 1.
#include "common/status.h"

namespace leap {

int Status::exit_code() const {
  switch (code_) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidInput:
    case StatusCode::kNotFound:
    case StatusCode::kUnsupported: return 2;
    case StatusCode::kIoError:
    case StatusCode::kInternal: return 1;
  }
  return 1;
}

}  // namespace leap
