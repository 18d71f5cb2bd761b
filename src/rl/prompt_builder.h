// Prompts for turn 1 and for the debugging turns, as token ids, fitted to the context.
//
// A conversation is: system text; a user message with the task's prompt, a summary of its buffers
// and parameters, and the answer format with an example; then, for each earlier turn, the
// assistant's answer and a user message with the sandbox's feedback. The prompt ends where the
// model's next answer begins. prompt_format.h turns messages into ids (chat template, trust
// rule, append or re-render).
// Fitting (token counts are the real ids' counts):
// - every feedback is bounded to max_feedback_chars, at a UTF-8 character boundary;
// - append mode first tries the previous prompt's ids + the sampled ids + the template's text
//   after them; if that is over max_prompt_tokens, the prompt is rebuilt from the messages:
// - while over max_prompt_tokens: older turns are shortened first, oldest first (answer elided,
//   feedback cut to its first line), then dropped, oldest first; then the latest feedback is cut
//   further, down to a floor. The latest answer, the task and the system text are never cut
//   (in append mode the latest answer keeps its sampled ids even then): if they alone do not
//   fit, the result says `fits = false` and the caller drops the sample.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rl/prompt_format.h"
#include "sandbox/verdict.h"
#include "tasks/task.h"

namespace leap::rl {

struct PromptOptions {
  std::string system_text;  // empty: default_system_text()
  std::string format_text;  // empty: default_format_text()
  size_t max_prompt_tokens = 2048;
  size_t max_feedback_chars = 2048;
  bool show_param_values = true;  // print the task's sizes next to the parameter names
};

// One earlier turn of the sample: what it answered and what the sandbox said. A sampled answer
// gives its ids (the stop they end with included); an answer given as text (SFT's candidates)
// leaves them empty and is encoded as plain text.
struct PreviousTurn {
  std::string answer;
  std::string feedback;
  std::vector<int32_t> answer_ids;
};

struct BuiltPrompt {
  std::vector<int32_t> ids;
  std::string text;                  // the ids decoded: exactly what the policy reads
  nlohmann::ordered_json messages;   // the conversation they encode (the next append starts here)
  bool appended = false;             // the previous prompt's ids + the sampled ids + the rest
  bool fits = true;                  // false: even the fully shortened prompt exceeds the budget
  int turns_shortened = 0;           // older turns shown with answer elided and feedback cut
  int turns_dropped = 0;             // older turns left out entirely
  bool latest_feedback_cut = false;  // the latest feedback had to be cut below max_feedback_chars
};

// The feedback of a turn as the policy reads it: verdict name, largest error and measured time
// where known, then the sandbox's own bounded text.
std::string describe_result(const sandbox::VerifyResult& result);
PreviousTurn previous_turn(std::string answer, const sandbox::VerifyResult& result,
                           std::vector<int32_t> answer_ids = {});

std::string default_system_text();
std::string default_format_text();  // docs/design.md's answer format, with an example

// "Buffers:\n- a: f32[n], input\n...Parameters: n = 4099 (integer)...": the kernel's interface.
std::string summarize_task_io(const tasks::Task& task, bool show_values);

// Cuts text to at most max_chars bytes at a UTF-8 boundary, marking the cut.
std::string bound_text(std::string_view text, size_t max_chars);

class PromptBuilder {
 public:
  PromptBuilder(PromptOptions opts, const PromptFormat& format);

  // The prompt for turn history.size() + 1 of a sample of `task`. `previous` is the prompt of
  // turn history.size() (append mode extends its ids); null rebuilds from the messages.
  Expected<BuiltPrompt> build(const tasks::Task& task, std::span<const PreviousTurn> history,
                              const BuiltPrompt* previous = nullptr) const;

  // The ids of an answer given as text and the template's end of the assistant message, as SFT
  // trains on them after `prompt`.
  Expected<std::vector<int32_t>> answer_ids(const BuiltPrompt& prompt,
                                            std::string_view answer) const;

  const PromptOptions& options() const { return opts_; }
  const PromptFormat& format() const { return format_; }

 private:
  struct Plan;  // how much of each earlier turn is shown
  // The messages before the latest answer, as `plan` shows them; *dropped_before_latest says how
  // many turns were left out just before it (the latest feedback mentions them).
  nlohmann::ordered_json head_messages(const tasks::Task& task,
                                       std::span<const PreviousTurn> history, const Plan& plan,
                                       int* dropped_before_latest) const;
  // An earlier answer's text as its assistant message holds it (without the stop it ended on).
  std::string answer_content(const PreviousTurn& turn) const;
  Expected<BuiltPrompt> encode_plan(const tasks::Task& task, std::span<const PreviousTurn> history,
                                    const Plan& plan) const;
  // The latest answer's ids and what follows them, after `head`'s or `previous`'s ids.
  Expected<std::vector<int32_t>> follow_answer(const nlohmann::ordered_json& head,
                                               const PreviousTurn& latest,
                                               const std::string& feedback_text,
                                               nlohmann::ordered_json* messages) const;

  PromptOptions opts_;
  const PromptFormat& format_;
};

}  // namespace leap::rl
