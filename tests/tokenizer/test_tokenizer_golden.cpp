// LEAP's ids against the committed goldens of the `tokenizers` package (make_goldens.py), for
// the four trained fixtures, and decode(encode(text)) == the normalized text.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "golden_compare.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/normalizer.h"

namespace leap::tokenizer {
namespace {

const std::string kSrc = LEAP_SOURCE_DIR;

void expect_golden(const std::string& name) {
  const auto r = testing::compare_golden(kSrc + "/tests/tokenizer/goldens/" + name + ".json", kSrc);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.cases, 300u);
  for (size_t i = 0; i < r.mismatches.size() && i < 10; ++i) ADD_FAILURE() << r.mismatches[i];
  EXPECT_EQ(r.mismatches.size(), 0u);
}

TEST(TokenizerGolden, Qwen2StyleMatchesHuggingFace) {
  expect_golden("qwen2_style");
}
TEST(TokenizerGolden, Llama3StyleMatchesHuggingFace) {
  expect_golden("llama3_style");
}
TEST(TokenizerGolden, DeepSeekStyleMatchesHuggingFace) {
  expect_golden("deepseek_style");
}

TEST(TokenizerGolden, DecodeGivesBackTheNormalizedText) {
  auto tok = load_hf_tokenizer(kSrc + "/tests/tokenizer/fixtures/qwen2_style");
  ASSERT_TRUE(tok) << tok.status().message();
  auto nfc = Normalizer::from_json(nlohmann::json::parse(R"({"type": "NFC"})"), "normalizer");
  ASSERT_TRUE(nfc);
  std::ifstream in(kSrc + "/tests/tokenizer/goldens/qwen2_style.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto g = nlohmann::json::parse(ss.str());
  size_t checked = 0;
  for (const auto& c : g["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ((*tok)->decode(c["plain"].get<std::vector<int32_t>>()), nfc->normalize(text)) << text;
    ++checked;
  }
  EXPECT_GT(checked, 300u);
}

TEST(TokenizerGolden, TemplateAddsTheBosOnlyWhenAsked) {
  auto tok = load_hf_tokenizer(kSrc + "/tests/tokenizer/fixtures/llama3_style");
  ASSERT_TRUE(tok) << tok.status().message();
  const auto bos = (*tok)->special_id("<|begin_of_text|>");
  ASSERT_TRUE(bos);
  const auto plain = (*tok)->encode("hello", false, false);
  const auto with = (*tok)->encode("hello", false, true);
  ASSERT_EQ(with.size(), plain.size() + 1);
  EXPECT_EQ(with[0], *bos);
  EXPECT_EQ((*tok)->eos_id(), *(*tok)->special_id("<|eot_id|>"));  // from tokenizer_config.json
}

}  // namespace
}  // namespace leap::tokenizer
