// Hand-worked cases for the tokenizer's parts: UTF-8 repair, the byte-level alphabet, the
// Oniguruma-to-PCRE2 translation, Split behaviours (Hugging Face's documented example), BPE
// merge order, added-token flags, and the loader's messages for bad or unsupported files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex_pattern.h"
#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

using nlohmann::json;

// One U+FFFD per maximal ill-formed subpart: the expected strings are Python's
// bytes.decode("utf-8", "replace") of the same bytes (Rust's from_utf8_lossy, which Hugging Face's
// decode uses, agrees).
TEST(Utf8, RepairReplacesEachIllFormedSubpartAsPythonDoes) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(repair_utf8("ab\xE2\x82"), "ab" + fffd);           // a 3-byte character cut after 2
  EXPECT_EQ(repair_utf8("\xF0\x9F\x98"), fffd);                 // an emoji cut after 3
  EXPECT_EQ(repair_utf8("\xF0\x9F\x98" "a"), fffd + "a");
  EXPECT_EQ(repair_utf8("\xF0\x9F" "x\x98"), fffd + "x" + fffd);
  EXPECT_EQ(repair_utf8("\xC3"), fffd);
  EXPECT_EQ(repair_utf8("\x80\x80"), fffd + fffd);              // stray continuation bytes
  EXPECT_EQ(repair_utf8("\xE0\x80\x80"), fffd + fffd + fffd);  // overlong: E0 80 never starts one
  EXPECT_EQ(repair_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
}

TEST(Utf8, RepairReplacesEachBadByte) {
  EXPECT_EQ(repair_utf8("a\xFF"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(repair_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));  // overlong '/'
}

TEST(Utf8, IncompleteTailIsHeldOnlyWhenItCanStillComplete) {
  EXPECT_EQ(utf8_incomplete_tail("ab\xF0\x9F\x98"), 3u);  // 3 of the emoji's 4 bytes
  EXPECT_EQ(utf8_incomplete_tail("ab\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xC3"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("ab\x80"), 0u);      // a stray continuation byte never completes
  EXPECT_EQ(utf8_incomplete_tail("ab\xE0\x80"), 0u);  // E0 80 is overlong: never valid
}

TEST(ByteLevel, SpaceAndNewlineAndEveryByteRoundTrip) {
  std::string s;
  append_byte_level(" \n", s);
  EXPECT_EQ(s, "\xC4\xA0\xC4\x8A");  // "ĠĊ"
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string chars, back;
  append_byte_level(all, chars);
  ASSERT_TRUE(append_bytes_of_byte_level(chars, back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(append_bytes_of_byte_level("\xE4\xBD\xA0", back));  // '你' is not in the alphabet
}

TEST(Regex, WhiteSpaceIsOniguruma) {
  const std::string cls =
      "[\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
      "\\x{205F}\\x{3000}]";
  EXPECT_EQ(translate_oniguruma("\\s+"), cls + "+");
  EXPECT_EQ(translate_oniguruma("[^\\s\\d]"), "[^" + cls.substr(1, cls.size() - 2) + "\\d]");
  EXPECT_EQ(translate_oniguruma("\\S"), "[^" + cls.substr(1));
  // Letters newer than PCRE2's Unicode 14 that Oniguruma has: U+13460 (Egyptian hieroglyphs
  // extended-A, Unicode 16) is a letter in both now.
  EXPECT_NE(translate_oniguruma("\\p{L}+").find("\\x{13460}-\\x{143FA}"), std::string::npos);
  auto letters = RegexPattern::compile("\\p{L}+");
  ASSERT_TRUE(letters);
  std::vector<std::pair<size_t, size_t>> lm;
  letters->find_all("\xF0\x93\x91\xA0", lm);
  EXPECT_EQ(lm.size(), 1u);
  auto re = RegexPattern::compile("\\s+");
  ASSERT_TRUE(re);
  std::vector<std::pair<size_t, size_t>> m;
  re->find_all(
      "a\xE1\xA0\x8E"
      "b",
      m);  // U+180E: not White_Space
  EXPECT_TRUE(m.empty());
  re->find_all(
      "a\xC2\x85"
      "b",
      m);  // U+0085 NEL: White_Space
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], (std::pair<size_t, size_t>{1, 3}));
}

std::vector<std::string> split_with(const char* behavior, const std::string& text) {
  auto p = PreTokenizer::from_json(json{{"type", "Split"},
                                        {"pattern", {{"String", "-"}}},
                                        {"behavior", behavior},
                                        {"invert", false}},
                                   "pre_tokenizer");
  EXPECT_TRUE(p) << p.status().message();
  std::vector<std::string> out;
  p->split(text, out);
  return out;
}

TEST(PreTokenizer, SplitBehavioursAsHuggingFaceDocumentsThem) {
  using V = std::vector<std::string>;
  const std::string t = "the-final--countdown";
  EXPECT_EQ(split_with("Removed", t), (V{"the", "final", "countdown"}));
  EXPECT_EQ(split_with("Isolated", t), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_with("MergedWithPrevious", t), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_with("MergedWithNext", t), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_with("Contiguous", t), (V{"the", "-", "final", "--", "countdown"}));
}

// Digits (DeepSeek-Coder, StarCoder2): each numeric character alone, or runs of them together;
// the pieces are what tokenizers' pre_tokenize_str gives (Arabic-Indic digits are numeric too).
TEST(PreTokenizer, DigitsIndividuallyOrInRuns) {
  using V = std::vector<std::string>;
  const std::string text = "ab123c45 \u0663\u0664x";
  for (bool individual : {true, false}) {
    auto p = PreTokenizer::from_json(json{{"type", "Digits"}, {"individual_digits", individual}}, "pre_tokenizer");
    ASSERT_TRUE(p) << p.status().message();
    std::vector<std::string> out;
    p->split(text, out);
    const V want = individual ? V{"ab", "1", "2", "3", "c", "4", "5", " ", "\u0663", "\u0664", "x"}
                              : V{"ab", "123", "c", "45", " ", "\u0663\u0664", "x"};
    EXPECT_EQ(out, want) << individual;
  }
}

TEST(PreTokenizer, ByteLevelPrefixSpaceAndGpt2Regex) {
  auto p = PreTokenizer::from_json(
      json{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}},
      "pre_tokenizer");
  ASSERT_TRUE(p);
  std::vector<std::string> out;
  p->split("Hello world's", out);
  EXPECT_EQ(out, (std::vector<std::string>{"\xC4\xA0Hello", "\xC4\xA0world", "'s"}));
}

BpeModel tiny_bpe(json merges, bool ignore_merges = false) {
  json j = {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"xyz", 6}}},
            {"merges", merges},
            {"ignore_merges", ignore_merges}};
  auto m = BpeModel::from_json(j, "model");
  EXPECT_TRUE(m) << m.status().message();
  return *m;
}

TEST(Bpe, LowestRankMergesFirstInBothMergeForms) {
  std::vector<int32_t> ids;
  tiny_bpe(json::array({"a b", "ab c"})).encode_word("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{5}));
  ids.clear();
  tiny_bpe(json::array({json::array({"b", "c"}), json::array({"a", "b"})})).encode_word("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 4}));  // "b c" ranks first, then no "a bc"
  ids.clear();
  tiny_bpe(json::array({"a b"})).encode_word("ababab", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 3, 3}));
}

TEST(Bpe, IgnoreMergesTakesAWholeVocabWord) {
  std::vector<int32_t> ids;
  tiny_bpe(json::array(), true).encode_word("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{5}));
  ids.clear();
  tiny_bpe(json::array(), false).encode_word("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
}

TEST(Bpe, LongWordsMergeLikeShortOnes) {
  // Past the scan limit the heap does the merging: the result must be the same pairs.
  std::vector<int32_t> ids;
  tiny_bpe(json::array({"a b", "ab c"}))
      .encode_word(std::string(40, 'a') + "abc" + std::string(10, 'c'), ids);
  std::vector<int32_t> want(40, 0);
  want.push_back(5);
  want.insert(want.end(), 10, 2);
  EXPECT_EQ(ids, want);
}

TEST(Bpe, BadMergeNamesTheField) {
  json j = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array({"a q"})}};
  auto m = BpeModel::from_json(j, "model");
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("model.merges[0]"), std::string::npos)
      << m.status().message();
}

std::vector<TextSegment> segments(const AddedToken& t, const std::string& text,
                                  bool parse_special) {
  AddedTokenMatcher m({t});
  std::vector<TextSegment> out;
  m.split(text, parse_special, out);
  return out;
}

TEST(AddedTokens, FlagsWidenOrRejectMatches) {
  AddedToken sep{.id = 9, .content = "<s>", .lstrip = true, .rstrip = true};
  auto s = segments(sep, "a  <s>  b", true);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].begin, 1u);  // both spaces before join the token
  EXPECT_EQ(s[1].end, 8u);    // and both after
  AddedToken word{.id = 9, .content = "ab", .single_word = true};
  EXPECT_EQ(segments(word, "xab ab", true).size(), 2u);  // only the second "ab" is a word
  AddedToken special{.id = 9, .content = "<|e|>", .special = true};
  EXPECT_EQ(segments(special, "x<|e|>y", false).size(), 1u);  // plain text: one span
  EXPECT_EQ(segments(special, "x<|e|>y", true).size(), 3u);
}

TEST(AddedTokens, LeftmostLongestWins) {
  AddedTokenMatcher m(
      {AddedToken{.id = 1, .content = "<a"}, AddedToken{.id = 2, .content = "<ab>"}});
  std::vector<TextSegment> out;
  m.split("x<ab>", true, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].id, 2);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "leap_tokenizer_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(Loader, UnsupportedComponentsAreNamed) {
  const json base = {
      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}}};
  json j = base;
  j["normalizer"] = {{"type", "Lowercase"}};
  auto t = load_hf_tokenizer(write_temp("lower.json", j.dump()));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(t.status().message().find("normalizer.type"), std::string::npos);
  EXPECT_NE(t.status().message().find("Lowercase"), std::string::npos);
  EXPECT_NE(t.status().message().find("lower.json"), std::string::npos);
  j = base;
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Metaspace"}}}}};
  t = load_hf_tokenizer(write_temp("meta.json", j.dump()));
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("pre_tokenizer.pretokenizers[0].type"), std::string::npos);
  j = base;
  j["model"]["type"] = "WordPiece";
  t = load_hf_tokenizer(write_temp("wp.json", j.dump()));
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("WordPiece"), std::string::npos);
  // Truncation and padding settings are ignored (transformers resets both on every encode).
  j = base;
  j["truncation"] = {{"max_length", 8}, {"strategy", "LongestFirst"}};
  j["padding"] = {{"strategy", "BatchLongest"}};
  t = load_hf_tokenizer(write_temp("trunc.json", j.dump()));
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ((*t)->encode("aaaaaaaaaaaa", false, false).size(), 12u);
  t = load_hf_tokenizer(write_temp("broken.json", "{\"model\": "));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().exit_code(), 2);
}

// A special token marked `normalized` (as DeepSeek-Coder's <|EOT|> is) is matched after
// normalization; in text whose special tokens are not allowed (sandbox feedback, the model's own
// answer) it must stay plain text, with or without a normalizer, and within a trusted span only
// where the whole span is trusted.
TEST(AddedTokens, NormalizedSpecialTokensObeyTheCallersRule) {
  json vocab = json::object();
  const std::string letters = "<|EOT>xy";
  for (size_t i = 0; i < letters.size(); ++i) vocab[std::string(1, letters[i])] = int(i);
  for (const bool with_normalizer : {false, true}) {
    json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
              {"added_tokens",
               {{{"id", 50}, {"content", "<|EOT|>"}, {"special", true}, {"normalized", true}}}}};
    if (with_normalizer) j["normalizer"] = {{"type", "NFC"}};
    auto t = load_hf_tokenizer(write_temp("normalized_special.json", j.dump()));
    ASSERT_TRUE(t) << t.status().message();
    const std::string text = "x<|EOT|>y";
    const auto has_special = [](const std::vector<int32_t>& ids) {
      return std::find(ids.begin(), ids.end(), 50) != ids.end();
    };
    const std::string tag = with_normalizer ? " (NFC normalizer)" : " (no normalizer)";
    EXPECT_TRUE(has_special((*t)->encode(text, /*parse_special=*/true, false))) << tag;
    const auto plain = (*t)->encode(text, /*parse_special=*/false, false);
    EXPECT_FALSE(has_special(plain)) << tag;
    EXPECT_EQ(plain.size(), text.size()) << tag;  // one id per character of the vocabulary
    // Trusted template text around untrusted content: only a span that holds the token.
    EXPECT_FALSE(has_special((*t)->encode_with_special_spans(text, {{0, 1}}))) << tag;
    EXPECT_TRUE(has_special((*t)->encode_with_special_spans(text, {{0, text.size()}}))) << tag;
  }
}

}  // namespace
}  // namespace leap::tokenizer
