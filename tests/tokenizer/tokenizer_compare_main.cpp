// tokenizer_compare GOLDEN.json [TOKENIZER_DIR]: prints the cases where LEAP's ids differ from the
// file's (at most 20) and exits 1 if any do. The differential test runs it on fresh random texts.
#include <cstdio>

#include "golden_compare.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tokenizer_compare GOLDEN.json [TOKENIZER_DIR]\n");
    return 2;
  }
  const auto r =
      leap::tokenizer::testing::compare_golden(argv[1], LEAP_SOURCE_DIR, argc > 2 ? argv[2] : "");
  if (!r.error.empty()) {
    std::fprintf(stderr, "error: %s\n", r.error.c_str());
    return 2;
  }
  for (size_t i = 0; i < r.mismatches.size() && i < 20; ++i)
    std::printf("%s\n", r.mismatches[i].c_str());
  std::printf("%zu passed, %zu failed\n", r.cases - r.mismatches.size(), r.mismatches.size());
  return r.mismatches.empty() ? 0 : 1;
}
