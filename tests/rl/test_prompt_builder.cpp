// Prompts: what turn 1 and the debugging turns contain, both built-in chat templates, the
// buffer/param summary, feedback bounds at UTF-8 boundaries, and the truncation order (older turns
// shortened, then dropped, then the latest feedback cut; the latest answer always kept). With the
// byte-level tokenizer one token is one byte, so token budgets are byte counts. Real tokenizers
// and model templates: test_prompt_format.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/byte_tokenizer.h"
#include "rl/prompt_builder.h"

namespace leap::rl {
namespace {

tasks::Task relu_task() {
  tasks::Task t;
  t.id = "L1/relu_mul";
  t.prompt = "Compute out[i] = max(a[i], 0) * b[i] for every i < n.";
  t.params = {{"n", int64_t{1048576}}, {"alpha", 0.5}};
  t.buffers = {
      {.name = "a", .shape = {"n"}, .role = tasks::Role::kIn},
      {.name = "out", .dtype = tasks::DType::kF16, .shape = {"n"}, .role = tasks::Role::kOut}};
  return t;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

const model::ByteTokenizer& byte_tokenizer() {
  static const model::ByteTokenizer tok;
  return tok;
}

// A format and a builder over it (the builder keeps a reference to the format).
struct Builder {
  PromptFormat format;
  PromptBuilder builder;
  Builder(size_t max_tokens, const std::string& tmpl, size_t feedback, MultiTurn mode)
      : format(*make_prompt_format(tmpl, "", byte_tokenizer(), {}, mode, 0)),
        builder({.max_prompt_tokens = max_tokens, .max_feedback_chars = feedback}, format) {}
  BuiltPrompt build(const tasks::Task& t, std::span<const PreviousTurn> h) const {
    auto p = builder.build(t, h);
    EXPECT_TRUE(p.has_value()) << p.status().message();
    return *p;
  }
};

Builder builder(size_t max_tokens, const std::string& tmpl = "plain", size_t feedback = 2048,
                MultiTurn mode = MultiTurn::kAppend) {
  return Builder(max_tokens, tmpl, feedback, mode);
}

std::vector<PreviousTurn> history(int n, size_t feedback_len = 300) {
  std::vector<PreviousTurn> h;
  for (int i = 1; i <= n; ++i)
    h.push_back({"```cuda\n// ANSWER_" + std::to_string(i) + "\n" + std::string(400, 'x') + "\n```",
                 "FEEDBACK_" + std::to_string(i) + ": COMPILE_ERROR line 3\n" +
                     std::string(feedback_len, 'e')});
  return h;
}

TEST(PromptBuilder, Turn1HoldsSystemTaskSummaryAndFormat) {
  auto p = builder(100000).build(relu_task(), {});
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.ids.size(), p.text.size());
  EXPECT_NE(p.text.find(default_system_text()), std::string::npos);
  EXPECT_NE(p.text.find("Compute out[i] = max(a[i], 0)"), std::string::npos);
  EXPECT_NE(p.text.find("- a: f32[n], input"), std::string::npos);
  EXPECT_NE(p.text.find("- out: f16[n], output"), std::string::npos);
  EXPECT_NE(p.text.find("- n = 1048576 (integer"), std::string::npos);
  EXPECT_NE(p.text.find("- alpha = 0.5 (float"), std::string::npos);
  EXPECT_NE(p.text.find("// launch: relu_mul<<<cdiv(n, 256), 256>>>(a, b, out, n)"),
            std::string::npos);
  EXPECT_TRUE(p.text.ends_with("### Assistant\n"));
}

TEST(PromptBuilder, ChatmlTurns) {
  auto h = history(1);
  auto b = builder(100000, "chatml");
  auto p = b.build(relu_task(), h);
  EXPECT_TRUE(p.text.starts_with("<|im_start|>system\n"));
  EXPECT_TRUE(p.text.ends_with("<|im_start|>assistant\n"));
  EXPECT_EQ(count_of(p.text, "<|im_start|>"), 5u);  // system, user, assistant, user, generation
  EXPECT_EQ(count_of(p.text, "<|im_end|>"), 4u);
  EXPECT_NE(p.text.find("<|im_start|>assistant\n```cuda\n// ANSWER_1"), std::string::npos);
  EXPECT_EQ(template_stop_strings("chatml"), std::vector<std::string>{"<|im_end|>"});
  auto end = b.builder.answer_ids(p, "ANS");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(byte_tokenizer().decode(*end), "ANS<|im_end|>\n");
}

TEST(PromptBuilder, LaterTurnsAppendAnswersAndFeedbackInOrder) {
  auto p = builder(100000).build(relu_task(), history(2));
  const size_t a1 = p.text.find("ANSWER_1"), f1 = p.text.find("FEEDBACK_1");
  const size_t a2 = p.text.find("ANSWER_2"), f2 = p.text.find("FEEDBACK_2");
  ASSERT_NE(f2, std::string::npos);
  EXPECT_LT(a1, f1);
  EXPECT_LT(f1, a2);
  EXPECT_LT(a2, f2);
  EXPECT_EQ(p.turns_shortened + p.turns_dropped, 0);
  EXPECT_EQ(count_of(p.text, "### End"), 2u);  // each earlier answer closed like a real turn
}

TEST(PromptBuilder, FeedbackIsBounded) {
  auto p = builder(100000, "plain", 100).build(relu_task(), history(1, 5000));
  EXPECT_NE(p.text.find("[... truncated]"), std::string::npos);
  EXPECT_LT(p.text.size(), builder(100000).build(relu_task(), {}).text.size() + 1000);
}

TEST(BoundText, CutsAtUtf8Boundaries) {
  std::string s;
  for (int i = 0; i < 50; ++i) s += "\xCE\xBB";  // lambda, two bytes each
  for (size_t cap = 17; cap < 40; ++cap) {
    auto b = bound_text(s, cap);
    EXPECT_LE(b.size(), cap);
    const size_t body = b.find('\n');
    ASSERT_NE(body, std::string::npos);
    EXPECT_EQ(body % 2, 0u) << "cap " << cap << " split a character";
  }
  EXPECT_EQ(bound_text("short", 100), "short");
}

TEST(PromptTruncation, OlderTurnsShortenedFirstThenDroppedLatestKept) {
  auto h = history(3);
  const size_t full = builder(1000000).build(relu_task(), h).ids.size();
  // A little under the full size: only the oldest turn is shortened.
  auto p = builder(full - 10).build(relu_task(), h);
  EXPECT_TRUE(p.fits);
  EXPECT_LE(p.ids.size(), full - 10);
  EXPECT_EQ(p.turns_shortened, 1);
  EXPECT_EQ(p.text.find("ANSWER_1"), std::string::npos);
  EXPECT_NE(p.text.find("FEEDBACK_1: COMPILE_ERROR line 3"), std::string::npos);  // its first line
  EXPECT_NE(p.text.find("ANSWER_2"), std::string::npos);
  EXPECT_NE(p.text.find("ANSWER_3"), std::string::npos);

  // Room for the task and the latest turn only: both older turns dropped, and said so.
  const size_t latest_only =
      builder(1000000).build(relu_task(), std::vector<PreviousTurn>{h[2]}).ids.size();
  p = builder(latest_only + 60).build(relu_task(), h);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.turns_dropped, 2);
  EXPECT_EQ(p.text.find("ANSWER_2"), std::string::npos);
  EXPECT_NE(p.text.find("2 earlier attempts are not shown"), std::string::npos);
  EXPECT_NE(p.text.find("ANSWER_3"), std::string::npos);
  EXPECT_NE(p.text.find("FEEDBACK_3"), std::string::npos);
  EXPECT_FALSE(p.latest_feedback_cut);
}

TEST(PromptTruncation, LatestFeedbackCutLastAndLatestAnswerNever) {
  auto h = history(2, 3000);
  const size_t latest_only =
      builder(1000000).build(relu_task(), std::vector<PreviousTurn>{h[1]}).ids.size();
  auto p = builder(latest_only - 1400).build(relu_task(), h);
  EXPECT_TRUE(p.fits);
  EXPECT_TRUE(p.latest_feedback_cut);
  EXPECT_EQ(p.turns_dropped, 1);
  EXPECT_NE(p.text.find("ANSWER_2"), std::string::npos);
  EXPECT_NE(p.text.find("FEEDBACK_2: COMPILE_ERROR"), std::string::npos);  // the head survives
  // Too small for the task and the latest answer: reported, the answer still there.
  p = builder(500).build(relu_task(), h);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.text.find("ANSWER_2"), std::string::npos);
  EXPECT_GT(p.ids.size(), 500u);
}

TEST(PromptBuilder, PlainAppendOfASampledAnswerEqualsTheRerendering) {
  // The sampled ids end on the stop string; the template's own "### End" is not written twice.
  const std::string answer = "```cuda\n__global__ void k() {}\n```\n";
  auto sampled = byte_tokenizer().encode(answer + "### End", false);
  std::vector<PreviousTurn> h = {{"", "FEEDBACK: COMPILE_ERROR", sampled}};
  auto append = builder(100000).build(relu_task(), h);
  auto rerender = builder(100000, "plain", 2048, MultiTurn::kRerender).build(relu_task(), h);
  EXPECT_EQ(append.ids, rerender.ids);
  EXPECT_EQ(count_of(append.text, "### End"), 1u);
  EXPECT_NE(append.text.find(answer + "### End\n\n### User\n"), std::string::npos);
}

TEST(PromptBuilder, AStopNotAfterANewlineIsStillWrittenOnce) {
  // "### End" sampled straight after the code: the template's "\n### End" is not added again.
  for (const std::string& answer : {std::string("```cuda\nint x;\n```"), std::string("")}) {
    auto sampled = byte_tokenizer().encode(answer + "### End", false);
    std::vector<PreviousTurn> h = {{"", "FEEDBACK", sampled}};
    auto b = builder(100000);
    auto turn1 = b.build(relu_task(), {});
    auto p = b.builder.build(relu_task(), h, &turn1);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(count_of(p->text, "### End"), 1u) << answer;
    EXPECT_TRUE(p->appended);
  }
}

TEST(PromptTruncation, AppendOverBudgetRebuildsButKeepsTheLatestSampledIds) {
  auto h = history(3);
  for (auto& turn : h) turn.answer_ids = byte_tokenizer().encode(turn.answer + "\n### End", false);
  auto b = builder(1000000);
  BuiltPrompt p1 = b.build(relu_task(), {});
  BuiltPrompt p2 = *b.builder.build(relu_task(), std::span(h).first(1), &p1);
  BuiltPrompt p3 = *b.builder.build(relu_task(), std::span(h).first(2), &p2);
  const size_t full = b.builder.build(relu_task(), h, &p3)->ids.size();
  auto small = builder(full - 10);
  auto p = small.builder.build(relu_task(), h, &p3);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->fits);
  EXPECT_FALSE(p->appended);
  EXPECT_EQ(p->turns_shortened, 1);
  const auto& latest = h[2].answer_ids;
  EXPECT_NE(std::search(p->ids.begin(), p->ids.end(), latest.begin(), latest.end()), p->ids.end());
}

}  // namespace
}  // namespace leap::rl
