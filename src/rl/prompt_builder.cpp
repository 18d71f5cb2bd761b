// Prompt rendering (plain and chatml templates) and the fitting policy of prompt_builder.h.
#include "rl/prompt_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/check.h"

namespace leap::rl {

namespace {

enum class Role { kSystem, kUser, kAssistant };

struct Message {
  Role role;
  std::string text;
};

// The latest feedback is never cut below this many bytes: the first compiler error or the
// mismatch summary must survive.
constexpr size_t kLatestFeedbackFloor = 256;
// An older turn, once shortened, keeps this much of its feedback's first line.
constexpr size_t kOlderFeedbackChars = 200;

const char* role_name(Role r) {
  switch (r) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
  }
  return "user";
}

std::string render_plain(const std::vector<Message>& msgs) {
  std::string out;
  for (const auto& m : msgs) {
    if (m.role == Role::kSystem) out += m.text + "\n\n";
    if (m.role == Role::kUser) out += "### User\n" + m.text + "\n\n";
    if (m.role == Role::kAssistant)
      out += "### Assistant\n" + m.text + std::string(assistant_end(ChatTemplate::kPlain));
  }
  return out + "### Assistant\n";
}

std::string render_chatml(const std::vector<Message>& msgs) {
  std::string out;
  for (const auto& m : msgs)
    out += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", role_name(m.role), m.text);
  return out + "<|im_start|>assistant\n";
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

PreviousTurn previous_turn(std::string answer, const sandbox::VerifyResult& result) {
  return {std::move(answer), describe_result(result)};
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

std::string_view assistant_end(ChatTemplate t) {
  return t == ChatTemplate::kChatml ? "<|im_end|>\n" : "\n### End\n\n";
}

std::string_view stop_string(ChatTemplate t) {
  return t == ChatTemplate::kChatml ? "<|im_end|>" : "### End";
}

std::string bound_text(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  static constexpr std::string_view kMark = "\n[... truncated]";
  size_t keep = max_chars > kMark.size() ? max_chars - kMark.size() : 0;
  // Never split a multi-byte UTF-8 character: back up over continuation bytes.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return std::string(text.substr(0, keep)) + std::string(kMark.substr(0, max_chars - keep));
}

PromptBuilder::PromptBuilder(PromptOptions opts, TokenCounter count_tokens)
    : opts_(std::move(opts)), count_tokens_(std::move(count_tokens)) {
  LEAP_CHECK(count_tokens_ != nullptr, "a prompt builder needs a token counter");
  if (opts_.system_text.empty()) opts_.system_text = default_system_text();
  if (opts_.format_text.empty()) opts_.format_text = default_format_text();
}

std::string PromptBuilder::render(const tasks::Task& task, std::span<const PreviousTurn> history,
                                  const Plan& plan) const {
  std::vector<Message> msgs;
  msgs.push_back({Role::kSystem, opts_.system_text});
  msgs.push_back({Role::kUser, "Task: " + task.prompt + "\n\n" +
                                   summarize_task_io(task, opts_.show_param_values) + "\n" +
                                   opts_.format_text});
  int dropped = 0;
  for (size_t i = 0; i < history.size(); ++i) {
    const bool latest = i + 1 == history.size();
    const int level = latest ? 0 : plan.older_level[i];
    if (level == 2) {
      ++dropped;
      continue;
    }
    if (level == 1) {
      msgs.push_back({Role::kAssistant, "[answer omitted to save space]"});
      msgs.push_back({Role::kUser, feedback_message(bound_text(first_line(history[i].feedback),
                                                               kOlderFeedbackChars),
                                                    dropped)});
    } else {
      const size_t cap = latest ? plan.latest_feedback_chars : opts_.max_feedback_chars;
      msgs.push_back({Role::kAssistant, history[i].answer});
      msgs.push_back(
          {Role::kUser, feedback_message(bound_text(history[i].feedback, cap), dropped)});
    }
    dropped = 0;
  }
  return opts_.chat_template == ChatTemplate::kChatml ? render_chatml(msgs) : render_plain(msgs);
}

BuiltPrompt PromptBuilder::build(const tasks::Task& task,
                                 std::span<const PreviousTurn> history) const {
  Plan plan;
  plan.older_level.assign(history.empty() ? 0 : history.size() - 1, 0);
  plan.latest_feedback_chars = opts_.max_feedback_chars;
  BuiltPrompt out;
  auto fits = [&] {
    out.text = render(task, history, plan);
    out.tokens = count_tokens_(out.text);
    return out.tokens <= opts_.max_prompt_tokens;
  };
  auto finish = [&](bool ok) {
    out.fits = ok;
    out.turns_shortened =
        static_cast<int>(std::count(plan.older_level.begin(), plan.older_level.end(), 1));
    out.turns_dropped =
        static_cast<int>(std::count(plan.older_level.begin(), plan.older_level.end(), 2));
    return out;
  };
  if (fits()) return finish(true);
  for (int level = 1; level <= 2; ++level)
    for (auto& l : plan.older_level) {
      l = level;
      if (fits()) return finish(true);
    }
  if (!history.empty()) {
    // Cut the latest feedback from its actual length, halving down to the floor.
    plan.latest_feedback_chars =
        std::min(plan.latest_feedback_chars, history.back().feedback.size());
    while (plan.latest_feedback_chars > kLatestFeedbackFloor) {
      plan.latest_feedback_chars = std::max(kLatestFeedbackFloor, plan.latest_feedback_chars / 2);
      out.latest_feedback_cut = true;
      if (fits()) return finish(true);
    }
  }
  return finish(false);
}

std::string PromptBuilder::render_example(const BuiltPrompt& prompt,
                                          std::string_view answer) const {
  return prompt.text + std::string(answer) + std::string(assistant_end(opts_.chat_template));
}

}  // namespace leap::rl
