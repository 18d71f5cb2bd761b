// Wire format of the typed MPI messages: every type round-trips field by field, and a truncated
// or padded message is rejected instead of read out of bounds.
#include <gtest/gtest.h>

#include "mpi/messages.h"

namespace leap::mpi {
namespace {

TEST(Messages, RoundTripNested) {
  RolloutResult r;
  r.completions.push_back({7, "```cuda\n__global__ void k(){}\n```", {1, 2, 3}, {4, 5}, {-0.5f, -1.25f}});
  r.completions.push_back({8, "", {}, {}, {}});
  r.want = 4;
  r.busy_s = 1.5;
  auto back = decode<RolloutResult>(encode(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->want, 4);
  EXPECT_DOUBLE_EQ(back->busy_s, 1.5);
  ASSERT_EQ(back->completions.size(), 2u);
  EXPECT_EQ(back->completions[0].uid, 7);
  EXPECT_EQ(back->completions[0].text, r.completions[0].text);
  EXPECT_EQ(back->completions[0].prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(back->completions[0].logprobs, (std::vector<float>{-0.5f, -1.25f}));
  EXPECT_TRUE(back->completions[1].text.empty());

  SandboxResults s;
  s.results.push_back({3, 6, 0.25, 12.5, 3.5, -1, "max error 0.25 at index 17", 1250.5});
  s.free_slots = 2;
  auto sb = decode<SandboxResults>(encode(s));
  ASSERT_TRUE(sb.has_value());
  EXPECT_EQ(sb->results[0].feedback, "max error 0.25 at index 17");
  EXPECT_EQ(sb->results[0].verdict, 6);
  EXPECT_DOUBLE_EQ(sb->results[0].compile_ms, 12.5);
  EXPECT_DOUBLE_EQ(sb->results[0].slot_ms, 1250.5);
  EXPECT_EQ(sb->free_slots, 2);

  Control c{Control::Kind::kTrain, 41, 2};
  auto cb = decode<Control>(encode(c));
  ASSERT_TRUE(cb.has_value());
  EXPECT_EQ(cb->kind, Control::Kind::kTrain);
  EXPECT_EQ(cb->step, 41);
  EXPECT_EQ(cb->turn, 2);

  TrainWork t;
  t.samples.push_back({{1, 2, 3, 4}, 2, {-0.1f, -0.2f}, 0.75f, 1});
  t.mini_batches = 2;
  auto tb = decode<TrainWork>(encode(t));
  ASSERT_TRUE(tb.has_value());
  EXPECT_EQ(tb->samples[0].tokens.size(), 4u);
  EXPECT_FLOAT_EQ(tb->samples[0].advantage, 0.75f);
  EXPECT_EQ(tb->samples[0].mini_batch, 1);
  EXPECT_EQ(tb->mini_batches, 2);
}

TEST(Messages, TruncatedOrPaddedIsRejected) {
  RolloutWork w;
  w.items.push_back({1, 2, {112, 114, 111, 109, 112, 116}, 99});
  auto bytes = encode(w);
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> shorter(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(decode<RolloutWork>(shorter).has_value()) << cut;
  }
  bytes.push_back(0);
  EXPECT_FALSE(decode<RolloutWork>(bytes).has_value());
}

TEST(Messages, HugeLengthPrefixDoesNotAllocate) {
  std::vector<uint8_t> bytes(8, 0xff);  // a vector length of 2^64-1 with no data behind it
  EXPECT_FALSE(decode<RolloutWork>(bytes).has_value());
  EXPECT_FALSE(decode<RolloutResult>(bytes).has_value());
}

}  // namespace
}  // namespace leap::mpi
