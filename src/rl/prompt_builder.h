// Prompts for turn 1 and for the debugging turns, rendered in a chat template and fitted to the
// context.
//
// A conversation is: system text; a user message with the task's prompt, a summary of its buffers
// and parameters, and the answer format with an example; then, for each earlier turn, the
// assistant's answer and a user message with the sandbox's feedback. The prompt ends where the
// model's next answer begins.
// Fitting (token counts come from a callback, so this file does not depend on any tokenizer):
// - every feedback is bounded to max_feedback_chars, at a UTF-8 character boundary;
// - while over max_prompt_tokens: older turns are shortened first, oldest first (answer elided,
//   feedback cut to its first line), then dropped, oldest first; then the latest feedback is cut
//   further, down to a floor. The latest answer, the task and the system text are never cut:
//   if they alone do not fit, the result says `fits = false` and the caller drops the sample.
// Templates: `plain` (role headers as text, for the byte-level demo model) and `chatml` (the
// Qwen2 family's <|im_start|>role ... <|im_end|> turns).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/verdict.h"
#include "tasks/task.h"

namespace leap::rl {

enum class ChatTemplate { kPlain, kChatml };

using TokenCounter = std::function<size_t(std::string_view)>;

struct PromptOptions {
  ChatTemplate chat_template = ChatTemplate::kPlain;
  std::string system_text;  // empty: default_system_text()
  std::string format_text;  // empty: default_format_text()
  size_t max_prompt_tokens = 2048;
  size_t max_feedback_chars = 2048;
  bool show_param_values = true;  // print the task's sizes next to the parameter names
};

// One earlier turn of the sample: what it answered and what the sandbox said.
struct PreviousTurn {
  std::string answer;
  std::string feedback;
};

struct BuiltPrompt {
  std::string text;
  size_t tokens = 0;
  bool fits = true;                  // false: even the fully shortened prompt exceeds the budget
  int turns_shortened = 0;           // older turns shown with answer elided and feedback cut
  int turns_dropped = 0;             // older turns left out entirely
  bool latest_feedback_cut = false;  // the latest feedback had to be cut below max_feedback_chars
};

// The feedback of a turn as the policy reads it: verdict name, largest error and measured time
// where known, then the sandbox's own bounded text.
std::string describe_result(const sandbox::VerifyResult& result);
PreviousTurn previous_turn(std::string answer, const sandbox::VerifyResult& result);

std::string default_system_text();
std::string default_format_text();  // DESIGN.md's answer format, with an example

// "Buffers:\n- a: f32[n], input\n...Parameters: n = 4099 (integer)...": the kernel's interface.
std::string summarize_task_io(const tasks::Task& task, bool show_values);

// Text that ends an assistant turn, and the stop string the sampler should watch for.
std::string_view assistant_end(ChatTemplate t);
std::string_view stop_string(ChatTemplate t);

// Cuts text to at most max_chars bytes at a UTF-8 boundary, marking the cut.
std::string bound_text(std::string_view text, size_t max_chars);

class PromptBuilder {
 public:
  PromptBuilder(PromptOptions opts, TokenCounter count_tokens);

  // The prompt for turn history.size() + 1 of a sample of `task`.
  BuiltPrompt build(const tasks::Task& task, std::span<const PreviousTurn> history) const;

  // The whole text of an answered turn (prompt + answer + end), as SFT trains on it.
  std::string render_example(const BuiltPrompt& prompt, std::string_view answer) const;

  const PromptOptions& options() const { return opts_; }

 private:
  struct Plan;  // how much of each earlier turn is shown
  std::string render(const tasks::Task& task, std::span<const PreviousTurn> history,
                     const Plan& plan) const;

  PromptOptions opts_;
  TokenCounter count_tokens_;
};

}  // namespace leap::rl
