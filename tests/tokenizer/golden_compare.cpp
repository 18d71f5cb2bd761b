// Each case is encoded twice, special strings as text ("plain") and parsed ("special").
#include "golden_compare.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

namespace leap::tokenizer::testing {
namespace {

std::string ids_text(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? "," : "") << ids[i];
  s << ']';
  return s.str();
}

}  // namespace

GoldenReport compare_golden(const std::string& golden_path, const std::string& source_dir,
                            const std::string& tokenizer_dir) {
  GoldenReport r;
  std::ifstream in(golden_path, std::ios::binary);
  if (!in) {
    r.error = golden_path + ": cannot open";
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json g = nlohmann::json::parse(ss.str());
  const std::string dir =
      tokenizer_dir.empty() ? source_dir + "/" + g["tokenizer"].get<std::string>() : tokenizer_dir;
  auto tok = load_hf_tokenizer(dir);
  if (!tok) {
    r.error = tok.status().message();
    return r;
  }
  for (const auto& c : g["cases"]) {
    const std::string text = c["text"];
    const auto want_plain = c["plain"].get<std::vector<int32_t>>();
    const auto want_special = c["special"].get<std::vector<int32_t>>();
    const auto plain = (*tok)->encode(text, false);
    const auto special = (*tok)->encode(text, true);
    if (plain != want_plain || special != want_special) {
      const bool p = plain != want_plain;
      std::ostringstream msg;
      msg << "case " << r.cases << " (" << (p ? "plain" : "special") << ") text "
          << nlohmann::json(text).dump() << "\n  hf   " << ids_text(p ? want_plain : want_special)
          << "\n  leap " << ids_text(p ? plain : special);
      r.mismatches.push_back(msg.str());
    }
    ++r.cases;
  }
  return r;
}

}  // namespace leap::tokenizer::testing
