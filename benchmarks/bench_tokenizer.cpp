// bench_tokenizer TOKENIZER_DIR CORPUS.json [REPEATS]: LEAP's HfTokenizer encoding a corpus (a JSON
// array of documents) on one thread, special strings as text. One warm-up pass (which fills the
// BPE word cache, as Hugging Face's own cache fills), then the best of REPEATS timed passes.
// Prints one JSON line: bytes, tokens, seconds, MB/s. benchmarks/bench_tokenizer.py runs it
// beside the `tokenizers` package on the same corpus.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_tokenizer TOKENIZER_DIR CORPUS.json [REPEATS]\n");
    return 2;
  }
  auto tok = leap::tokenizer::load_hf_tokenizer(argv[1]);
  if (!tok) {
    std::fprintf(stderr, "error: %s\n", tok.status().message().c_str());
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto docs = nlohmann::json::parse(ss.str()).get<std::vector<std::string>>();
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  size_t bytes = 0, tokens = 0;
  for (const auto& d : docs) {
    bytes += d.size();
    tokens += (*tok)->encode(d, false).size();
  }
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    for (const auto& d : docs) n += (*tok)->encode(d, false).size();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (n != tokens) return 1;
    best = std::min(best, s);
  }
  std::printf("{\"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.6f, \"mb_per_s\": %.3f}\n", bytes,
              tokens, best, static_cast<double>(bytes) / best / 1e6);
  return 0;
}
