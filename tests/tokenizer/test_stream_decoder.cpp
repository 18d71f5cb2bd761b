// Incremental decoding: a character split across tokens is released whole, and a stop string is
// found in the released text as soon as its last character is complete, never earlier.
#include <gtest/gtest.h>

#include "model/byte_tokenizer.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

TEST(StreamDecoder, HoldsASplitCharacterUntilItsLastByte) {
  model::ByteTokenizer bytes;
  StreamDecoder d(bytes);
  const std::string emoji = "\xF0\x9F\x98\x80";
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(static_cast<unsigned char>(emoji[0])), "");
  EXPECT_EQ(d.push(static_cast<unsigned char>(emoji[1])), "");
  EXPECT_EQ(d.push(static_cast<unsigned char>(emoji[2])), "");
  EXPECT_EQ(d.push(static_cast<unsigned char>(emoji[3])), emoji);
  EXPECT_EQ(d.text(), "a" + emoji);
  EXPECT_EQ(d.push(0xC3), "");  // an unfinished character at the end of the stream
  EXPECT_EQ(d.flush(), "\xC3");
}

TEST(StreamDecoder, StopStringAcrossByteLevelTokens) {
  auto tok =
      load_hf_tokenizer(std::string(LEAP_SOURCE_DIR) + "/tests/tokenizer/fixtures/qwen2_style");
  ASSERT_TRUE(tok) << tok.status().message();
  // An emoji stop string: the fixture's small vocab has no token for it, so its four bytes arrive
  // over several byte-level tokens.
  const std::string stop = "\xF0\x9F\xA6\x80\xF0\x9F\xA6\x80";  // two crabs
  const std::string text = "int x = 1; // \xE4\xBD\xA0\xE5\xA5\xBD" + stop + " tail";
  const auto ids = (*tok)->encode(text, false);
  StreamDecoder d(**tok);
  size_t split_chars = 0, found_at = ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string bytes = (*tok)->token_bytes(ids[i]);
    const std::string out = d.push(ids[i]);
    if (out.size() < bytes.size()) ++split_chars;
    EXPECT_TRUE(is_valid_utf8(d.text())) << "released text ends inside a character at token " << i;
    if (found_at == ids.size() && d.text().find(stop) != std::string::npos) found_at = i;
  }
  EXPECT_GT(split_chars, 0u) << "the test needs a character split across tokens";
  ASSERT_LT(found_at, ids.size());
  // The stop was found exactly at the token that completed it.
  std::string before;
  for (size_t i = 0; i < found_at; ++i) before += (*tok)->token_bytes(ids[i]);
  EXPECT_EQ(before.find(stop), std::string::npos);
  EXPECT_EQ(d.text() + d.flush(), text);
}

}  // namespace
}  // namespace leap::tokenizer
