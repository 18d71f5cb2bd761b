// The SFT loss's weights, worked by hand: answer tokens weigh 1, prompt tokens
// sft.prompt_loss_weight, the first token (never predicted) and padding 0; and the normaliser the
// trainer sums per example equals the weights a micro-batch gets.
#include <gtest/gtest.h>

#include "mpi/sft_trainer.h"

namespace leap::mpi {
namespace {

TrainSample example(int length, int prompt_len) {
  TrainSample e;
  for (int i = 0; i < length; ++i) e.tokens.push_back(10 + i);
  e.prompt_len = prompt_len;
  return e;
}

TEST(SftLossWeights, AnswerOnePromptItsWeightFirstTokenAndPaddingZero) {
  const TrainSample a = example(5, 3), b = example(3, 1);
  const std::vector<float> w = sft_loss_weights({&a, &b}, 5, 0.5);
  // a: token 0 is not predicted, tokens 1-2 are the prompt's, 3-4 the answer's.
  // b: a one-token prompt, then two answer tokens, then two positions of padding.
  const std::vector<float> want = {0, 0.5f, 0.5f, 1, 1, /**/ 0, 1, 1, 0, 0};
  EXPECT_EQ(w, want);
  EXPECT_DOUBLE_EQ(sft_loss_tokens(a, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(sft_loss_tokens(b, 0.5), 2.0);
}

TEST(SftLossWeights, WeightZeroIsTheAnswerAlone) {
  const TrainSample a = example(7, 4);
  const std::vector<float> w = sft_loss_weights({&a}, 9, 0.0);
  EXPECT_EQ(w, (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(sft_loss_tokens(a, 0.0), 3.0);  // the answer's tokens, as before the option
}

TEST(SftLossWeights, NormaliserIsTheSumOfTheWeights) {
  for (double pw : {0.0, 0.25, 1.0}) {
    for (int len = 1; len <= 6; ++len) {
      for (int p = 0; p <= len; ++p) {
        const TrainSample e = example(len, p);
        double sum = 0;
        for (float v : sft_loss_weights({&e}, len, pw)) sum += v;
        EXPECT_NEAR(sft_loss_tokens(e, pw), sum, 1e-6) << "length " << len << ", prompt " << p << ", weight " << pw;
      }
    }
  }
}

}  // namespace
}  // namespace leap::mpi
