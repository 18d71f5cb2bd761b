// Prompt rendering (plain and chatml templates) and the fitting policy of prompt_builder.h.
#include "rl/prompt_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/check.h"
#include "tokenizer/utf8.h"

namespace leap::rl {

namespace {

// The latest feedback is never cut below this many bytes: the first compiler error or the
// mismatch summary must survive.
constexpr size_t kLatestFeedbackFloor = 256;
// An older turn, once shortened, keeps this much of its feedback's first line.
constexpr size_t kOlderFeedbackChars = 200;

// A chat message. Its text is made valid UTF-8 first: compiler output and a policy's answer cut
// at the token limit may hold any bytes, and the tokenizer would otherwise repair them and move
// the template's span offsets.
nlohmann::ordered_json message(const char* role, std::string_view text) {
  return {{"role", role},
          {"content", tokenizer::is_valid_utf8(text) ? std::string(text) : tokenizer::repair_utf8(text)}};
}

std::string first_line(std::string_view text) {
  auto nl = text.find('\n');
  return std::string(nl == std::string_view::npos ? text : text.substr(0, nl));
}

const char* role_text(tasks::Role r) {
  switch (r) {
    case tasks::Role::kIn:
      return "input (must not be modified)";
    case tasks::Role::kOut:
      return "output";
    case tasks::Role::kInOut:
      return "input and output";
  }
  return "input";
}

std::string feedback_message(std::string_view feedback, int dropped_before) {
  std::string note = dropped_before > 0
                         ? fmt::format("({} earlier attempts are not shown.)\n", dropped_before)
                         : "";
  return note + "The sandbox checked your previous answer:\n" + std::string(feedback) +
         "\n\nFix the kernel and answer again in the same format.";
}

}  // namespace

struct PromptBuilder::Plan {
  std::vector<int> older_level;  // per earlier turn but the latest: 0 full, 1 shortened, 2 dropped
  size_t latest_feedback_chars = 0;
};

std::string describe_result(const sandbox::VerifyResult& r) {
  std::string out = fmt::format("Verdict: {}", sandbox::verdict_name(r.verdict));
  if (r.verdict == sandbox::Verdict::kWrongAnswer)
    out += fmt::format(" (max abs error {:.3g})", r.max_abs_err);
  if (r.speedup) out += fmt::format(" (speedup over the reference {:.2f}x)", *r.speedup);
  out += "\n";
  return r.feedback.empty() ? out : out + r.feedback;
}

PreviousTurn previous_turn(std::string answer, const sandbox::VerifyResult& result,
                           std::vector<int32_t> answer_ids) {
  return {std::move(answer), describe_result(result), std::move(answer_ids)};
}

std::string default_system_text() {
  return "You are an expert CUDA engineer. Write a correct and fast CUDA kernel for the task. "
         "Your answer is checked by compiling and running it against a trusted reference.";
}

std::string default_format_text() {
  return "Answer with one ```cuda block holding device code only (no host code, no main) and one "
         "or more launch lines, run in order:\n"
         "  // launch: NAME<<<GRID, BLOCK[, SMEM]>>>(ARGS)\n"
         "GRID and BLOCK are integer expressions or (x, y[, z]) tuples over the parameters, "
         "integer literals, + - * / %, parentheses, cdiv, min and max. An argument is a buffer "
         "name, a scratch name or an expression. Zeroed scratch buffers are declared with\n"
         "  // scratch: NAME DTYPE[EXPR]\n"
         "Example:\n"
         "```cuda\n"
         "__global__ void relu_mul(const float* __restrict__ a, const float* __restrict__ b,\n"
         "                         float* __restrict__ out, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = fmaxf(a[i], 0.f) * b[i];\n"
         "}\n"
         "// launch: relu_mul<<<cdiv(n, 256), 256>>>(a, b, out, n)\n"
         "```";
}

std::string summarize_task_io(const tasks::Task& task, bool show_values) {
  std::string out = "Buffers (pass them to the kernel by name):\n";
  for (const auto& b : task.buffers) {
    std::string shape;
    for (const auto& d : b.shape) shape += (shape.empty() ? "" : ", ") + d;
    out += fmt::format("- {}: {}[{}], {}\n", b.name, tasks::dtype_name(b.dtype), shape,
                       role_text(b.role));
  }
  if (task.params.empty()) return out;
  out += "Parameters:\n";
  for (const auto& [name, value] : task.params) {
    const bool is_int = std::holds_alternative<int64_t>(value);
    const char* kind =
        is_int ? "integer, usable in launch lines and shapes" : "float, a kernel argument only";
    if (!show_values) {
      out += fmt::format("- {} ({})\n", name, kind);
    } else if (is_int) {
      out += fmt::format("- {} = {} ({})\n", name, std::get<int64_t>(value), kind);
    } else {
      out += fmt::format("- {} = {} ({})\n", name, std::get<double>(value), kind);
    }
  }
  if (show_values) out += "The kernel must be correct for other sizes too.\n";
  return out;
}

std::string bound_text(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  static constexpr std::string_view kMark = "\n[... truncated]";
  size_t keep = max_chars > kMark.size() ? max_chars - kMark.size() : 0;
  // Never split a multi-byte UTF-8 character: back up over continuation bytes.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return std::string(text.substr(0, keep)) + std::string(kMark.substr(0, max_chars - keep));
}

PromptBuilder::PromptBuilder(PromptOptions opts, const PromptFormat& format)
    : opts_(std::move(opts)), format_(format) {
  if (opts_.system_text.empty()) opts_.system_text = default_system_text();
  if (opts_.format_text.empty()) opts_.format_text = default_format_text();
}

nlohmann::ordered_json PromptBuilder::head_messages(const tasks::Task& task,
                                                    std::span<const PreviousTurn> history,
                                                    const Plan& plan,
                                                    int* dropped_before_latest) const {
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  msgs.push_back(message("system", opts_.system_text));
  msgs.push_back(message("user", "Task: " + task.prompt + "\n\n" +
                                     summarize_task_io(task, opts_.show_param_values) + "\n" +
                                     opts_.format_text));
  int dropped = 0;
  for (size_t i = 0; i + 1 < history.size(); ++i) {
    const int level = plan.older_level[i];
    if (level == 2) {
      ++dropped;
      continue;
    }
    if (level == 1) {
      msgs.push_back(message("assistant", "[answer omitted to save space]"));
      msgs.push_back(message("user", feedback_message(bound_text(first_line(history[i].feedback),
                                                                 kOlderFeedbackChars),
                                                      dropped)));
    } else {
      msgs.push_back(message("assistant", answer_content(history[i])));
      msgs.push_back(message(
          "user", feedback_message(bound_text(history[i].feedback, opts_.max_feedback_chars),
                                   dropped)));
    }
    dropped = 0;
  }
  *dropped_before_latest = dropped;
  return msgs;
}

std::string PromptBuilder::answer_content(const PreviousTurn& turn) const {
  return turn.answer_ids.empty() ? turn.answer : format_.split_answer(turn.answer_ids).content;
}

Expected<std::vector<int32_t>> PromptBuilder::follow_answer(const nlohmann::ordered_json& head,
                                                            const PreviousTurn& latest,
                                                            const std::string& feedback_text,
                                                            nlohmann::ordered_json* messages) const {
  SplitAnswer answer = latest.answer_ids.empty() ? SplitAnswer{latest.answer, ""}
                                                 : format_.split_answer(latest.answer_ids);
  nlohmann::ordered_json after = nlohmann::ordered_json::array();
  after.push_back(message("user", feedback_text));
  LEAP_ASSIGN_OR_RETURN(chat::Rendering rest,
                        format_.render_after_answer(head, answer.content, after, true));
  // The sampler kept the stop it ended on (EOS, "### End"); when the template's own end of the
  // message begins with it (after the template's whitespace), that copy is the policy's and is
  // not written twice.
  rest = rest.tail(format_.sampled_overlap(answer, rest.text));
  std::vector<int32_t> ids =
      latest.answer_ids.empty() ? format_.encode_text(latest.answer) : latest.answer_ids;
  auto tail = format_.encode(rest, false);
  ids.insert(ids.end(), tail.begin(), tail.end());
  *messages = head;
  messages->push_back(message("assistant", answer.content));
  for (const auto& m : after) messages->push_back(m);
  return ids;
}

Expected<BuiltPrompt> PromptBuilder::encode_plan(const tasks::Task& task,
                                                 std::span<const PreviousTurn> history,
                                                 const Plan& plan) const {
  int dropped = 0;
  nlohmann::ordered_json head = head_messages(task, history, plan, &dropped);
  BuiltPrompt out;
  if (history.empty() || format_.options().multi_turn == MultiTurn::kAppend) {
    LEAP_ASSIGN_OR_RETURN(chat::Rendering r, format_.render(head, true));
    out.ids = format_.encode(r, true);
    out.messages = head;
  }
  if (history.empty()) return out;
  const PreviousTurn& latest = history.back();
  const std::string feedback = feedback_message(
      bound_text(latest.feedback, plan.latest_feedback_chars), dropped);
  if (format_.options().multi_turn == MultiTurn::kAppend) {
    // The latest answer keeps its sampled ids even when older turns are rebuilt from text.
    LEAP_ASSIGN_OR_RETURN(auto rest, follow_answer(head, latest, feedback, &out.messages));
    out.ids.insert(out.ids.end(), rest.begin(), rest.end());
    return out;
  }
  out.messages = head;
  out.messages.push_back(message("assistant", answer_content(latest)));
  out.messages.push_back(message("user", feedback));
  LEAP_ASSIGN_OR_RETURN(chat::Rendering r, format_.render(out.messages, true));
  out.ids = format_.encode(r, true);
  return out;
}

Expected<BuiltPrompt> PromptBuilder::build(const tasks::Task& task,
                                           std::span<const PreviousTurn> history,
                                           const BuiltPrompt* previous) const {
  const auto& tok = format_.tokenizer();
  auto finish = [&](BuiltPrompt out, const Plan* plan, bool ok) {
    out.fits = ok;
    out.text = tok.decode(out.ids);
    if (plan) {
      out.turns_shortened =
          static_cast<int>(std::count(plan->older_level.begin(), plan->older_level.end(), 1));
      out.turns_dropped =
          static_cast<int>(std::count(plan->older_level.begin(), plan->older_level.end(), 2));
    }
    return out;
  };
  if (format_.options().multi_turn == MultiTurn::kAppend && previous && !history.empty() &&
      previous->messages.is_array()) {
    BuiltPrompt out;
    const std::string feedback =
        feedback_message(bound_text(history.back().feedback, opts_.max_feedback_chars), 0);
    LEAP_ASSIGN_OR_RETURN(auto rest, follow_answer(previous->messages, history.back(), feedback,
                                                   &out.messages));
    out.ids = previous->ids;
    out.ids.insert(out.ids.end(), rest.begin(), rest.end());
    out.appended = true;
    if (out.ids.size() <= opts_.max_prompt_tokens) return finish(std::move(out), nullptr, true);
  }
  Plan plan;
  plan.older_level.assign(history.empty() ? 0 : history.size() - 1, 0);
  plan.latest_feedback_chars = opts_.max_feedback_chars;
  BuiltPrompt out;
  auto fits = [&]() -> Expected<bool> {
    LEAP_ASSIGN_OR_RETURN(out, encode_plan(task, history, plan));
    return out.ids.size() <= opts_.max_prompt_tokens;
  };
  LEAP_ASSIGN_OR_RETURN(bool ok, fits());
  if (ok) return finish(std::move(out), &plan, true);
  for (int level = 1; level <= 2; ++level)
    for (auto& l : plan.older_level) {
      l = level;
      LEAP_ASSIGN_OR_RETURN(ok, fits());
      if (ok) return finish(std::move(out), &plan, true);
    }
  if (!history.empty()) {
    // Cut the latest feedback from its actual length, halving down to the floor.
    plan.latest_feedback_chars =
        std::min(plan.latest_feedback_chars, history.back().feedback.size());
    while (plan.latest_feedback_chars > kLatestFeedbackFloor) {
      plan.latest_feedback_chars = std::max(kLatestFeedbackFloor, plan.latest_feedback_chars / 2);
      LEAP_ASSIGN_OR_RETURN(ok, fits());
      out.latest_feedback_cut = true;
      if (ok) return finish(std::move(out), &plan, true);
    }
  }
  return finish(std::move(out), &plan, false);
}

Expected<std::vector<int32_t>> PromptBuilder::answer_ids(const BuiltPrompt& prompt,
                                                         std::string_view answer) const {
  LEAP_ASSIGN_OR_RETURN(
      chat::Rendering end,
      format_.render_after_answer(prompt.messages, answer, nlohmann::ordered_json::array(), false));
  std::vector<int32_t> ids = format_.encode_text(answer);
  auto tail = format_.encode(end, false);
  ids.insert(ids.end(), tail.begin(), tail.end());
  return ids;
}

}  // namespace leap::rl
