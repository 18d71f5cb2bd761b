// How a conversation becomes the policy's prompt ids: a chat template (the model's own, from its
// tokenizer_config.json, or a built-in one) and the policy's tokenizer, with one rule for trust:
// only the template's own markers may become special-token ids. Messages (the task, the
// sandbox's feedback, earlier answers) are encoded as plain text, so a literal "<|im_end|>" in
// feedback or in a kernel stays text and can never end a turn or open a new role.
//
// Multi-turn prompts (docs/design.md, "Multi-turn prompts"):
// - append (the default): the turn-t prompt is the turn-(t-1) prompt's ids, the ids the policy
//   sampled exactly as generated, then the template's rendering of what follows the answer
//   (the end of the assistant message, the feedback as a user message, the generation prompt);
// - rerender: the whole conversation rendered again as apply_chat_template renders it and
//   encoded afresh (earlier answers re-encoded from their text).
// What follows an answer is found by rendering the conversation with a sentinel in place of the
// answer's text, so templates that trim or rewrite content (Llama's `| trim`, Qwen3's think
// handling) still give their own end-of-turn text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "common/status.h"
#include "model/tokenizer.h"

namespace leap::rl {

enum class MultiTurn { kAppend, kRerender };

// An answer as sampled, split where the sampler stopped: `content` is what the assistant message
// holds; `stop` is the EOS token's text or the stop string (with any bytes after it in its last
// token) that ended it, "" when the answer ran to the token limit.
struct SplitAnswer {
  std::string content;
  std::string stop;
  std::string stop_core;  // the EOS token's text or the stop string itself ("" without a stop)
};

struct PromptFormatOptions {
  std::string name;  // "plain", "chatml" or "model" (the model's own template), for logs
  // Prepend the tokenizer's BOS prefix (tokenizer.bos_prefix()). Built-in templates need it; a
  // model's own template writes its BOS itself (transformers encodes its rendering with
  // add_special_tokens=False).
  bool add_bos = false;
  std::vector<std::string> stop_strings;  // what ends an answer besides an EOS id
  std::vector<int32_t> eos_ids;           // any of them ends an answer
  MultiTurn multi_turn = MultiTurn::kAppend;
  chat::RenderOptions render;             // strftime_now's pinned time, enable_thinking=false
};

class PromptFormat {
 public:
  PromptFormat(chat::ChatTemplate tmpl, const model::Tokenizer& tokenizer, PromptFormatOptions o);

  // apply_chat_template(messages, add_generation_prompt=generation_prompt).
  Expected<chat::Rendering> render(const nlohmann::ordered_json& messages,
                                   bool generation_prompt) const;
  // What the template writes after the content of an assistant message that follows `before`,
  // when the messages `after` follow it: the end of the assistant message, `after`, and the
  // generation prompt if asked. `answer` is the answer's text: only its trailing whitespace is
  // shown to the template (a template may test for a final newline or trim it).
  Expected<chat::Rendering> render_after_answer(const nlohmann::ordered_json& before,
                                                std::string_view answer,
                                                const nlohmann::ordered_json& after,
                                                bool generation_prompt) const;
  // Template spans with special tokens, content spans as plain text; the BOS prefix if add_bos
  // and with_bos. Invalid UTF-8 is repaired span by span first (each bad byte becomes U+FFFD, as
  // the tokenizer would), so span offsets stay right.
  std::vector<int32_t> encode(const chat::Rendering& r, bool with_bos) const;
  // How many bytes at the start of `rest` (what the template writes after an answer) the sampled
  // answer already holds: the template's whitespace, then the stop the sampler ended on (and
  // whatever of its last token ran past the stop, where the template's text goes on the same
  // way). 0 when the template's text does not begin with that stop.
  size_t sampled_overlap(const SplitAnswer& answer, std::string_view rest) const;
  // Whether appending (MultiTurn::kAppend) gives a later turn the text the template itself renders
  // for the conversation: a probe (system, user, an answer, feedback) rendered turn by turn and
  // whole. nullopt when they agree (Qwen2.5, Llama-3.1); else where they first differ, e.g.
  // Qwen3, whose rendering drops an earlier answer's think block that the policy saw. Not an
  // error: the policy then trains on what it saw; prompt.multi_turn = rerender gives the
  // template's own rendering.
  std::optional<std::string> append_difference() const;
  // Plain text (an answer given as text): special-token strings stay text.
  std::vector<int32_t> encode_text(std::string_view text) const;

  SplitAnswer split_answer(std::span<const int32_t> ids) const;

  const model::Tokenizer& tokenizer() const { return tokenizer_; }
  const PromptFormatOptions& options() const { return o_; }
  // The sampler's stop strings when sampler.stop sets them (the template's by default).
  void set_stop_strings(std::vector<std::string> stops) { o_.stop_strings = std::move(stops); }
  // "model template (Qwen2...)" etc., for the start-up log.
  std::string describe() const;

 private:
  chat::ChatTemplate tmpl_;
  const model::Tokenizer& tokenizer_;
  PromptFormatOptions o_;
};

// The source of a built-in template: "plain" (role headers as text, for the demo policies, which
// have none of their own) or "chatml" (<|im_start|>role ... <|im_end|>, for Qwen-family base models).
std::optional<std::string> builtin_template_source(const std::string& name);

// prompt.chat_template resolved: "auto" becomes "model" when the model folder's
// tokenizer_config.json has a chat template, else "plain"; other names stay.
std::string resolve_chat_template(const std::string& chat_template, const std::string& model_dir);
// What ends an answer under a template besides the EOS ids: "### End" (plain), "<|im_end|>"
// (chatml, for tokenizers without it as a token), none for a model's own template.
std::vector<std::string> template_stop_strings(const std::string& resolved_name);

// The special token a model's own chat template closes an assistant message with (Qwen's
// <|im_end|>, Llama-3's <|eot_id|>), found by rendering a conversation that ends with an
// answer: the first token after it, when it is an added token. A base model ships the template
// but may list only <|endoftext|> as its EOS: without this id among the stop ids the policy
// would write past the end of its turn and invent the next one. Nothing when the folder has no
// template or the template closes a turn with plain text.
std::optional<int32_t> model_template_end_of_turn(const std::string& model_dir,
                                                  const model::Tokenizer& tokenizer);

// prompt.chat_template: "auto" (the model folder's chat template when its tokenizer_config.json
// has one, else plain), "model", "plain" or "chatml". eos_ids: what ends generation (the
// sampler's). Errors name the file or the option.
Expected<PromptFormat> make_prompt_format(const std::string& chat_template,
                                          const std::string& model_dir,
                                          const model::Tokenizer& tokenizer,
                                          std::vector<int32_t> eos_ids, MultiTurn multi_turn,
                                          int64_t now_unix_seconds);

}  // namespace leap::rl
