// Compares LEAP's HfTokenizer with the ids a golden file holds (the format oracle_common.py
// writes: {"tokenizer": DIR, "cases": [{"text", "plain", "special"}]}). Used by the golden test
// and by the differential test's driver.
#pragma once

#include <string>
#include <vector>

namespace leap::tokenizer::testing {

struct GoldenReport {
  size_t cases = 0;
  std::vector<std::string> mismatches;  // one line each: the case, the text, both id lists
  std::string error;                    // loading failed
};

// tokenizer_dir: when empty, the golden file's "tokenizer" (relative to source_dir).
GoldenReport compare_golden(const std::string& golden_path, const std::string& source_dir,
                            const std::string& tokenizer_dir = "");

}  // namespace leap::tokenizer::testing
