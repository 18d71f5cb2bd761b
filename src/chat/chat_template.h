// Chat templates: a model's Jinja chat template (from tokenizer_config.json), rendered the way
// transformers' apply_chat_template renders it, with every byte of the prompt tagged as the
// template's own (role markers, special tokens: encode with specials) or the caller's content
// (messages and tools: encode as plain text, so a literal "<|im_end|>" typed by a user never
// becomes a special token).
//
// The interpreter covers a Jinja subset (docs/design.md, "Chat templates"); a template that uses
// anything else fails to load with exit-code-2 status naming the construct and its line.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace leap::chat {

struct Stmt;

enum class SpanKind { kTemplate, kContent };

struct Span {
  size_t begin = 0;
  size_t end = 0;
  SpanKind kind = SpanKind::kTemplate;
};

// A rendered prompt. `spans` cover `text` in order, without gaps; neighbours differ in kind.
struct Rendering {
  std::string text;
  std::vector<Span> spans;

  // The rendering from byte `from` on (spans cut to match).
  Rendering tail(size_t from) const;
};

struct RenderOptions {
  bool add_generation_prompt = true;
  // What strftime_now() formats (UTC seconds). Pinned once per run and recorded with it, so a
  // template that prints today's date (Llama 3.2) renders the same prompt on every rank and rerun.
  // Unset, a template that calls strftime_now() fails rather than print some other date.
  std::optional<std::int64_t> now_unix_seconds;
  // Tool schemas (a JSON list), or null: transformers passes tools=None when there are none.
  nlohmann::ordered_json tools = nullptr;
  // Further template variables. enable_thinking=false is passed to every template; those that
  // read it (Qwen3) then open the answer with an empty think block.
  nlohmann::ordered_json variables = {{"enable_thinking", false}};
};

class ChatTemplate {
 public:
  // Parses `source` whole. special_tokens (bos_token, eos_token, ...) become template variables.
  static Expected<ChatTemplate> parse(
      const std::string& source, std::vector<std::pair<std::string, std::string>> special_tokens);

  // apply_chat_template(messages, tools=options.tools, add_generation_prompt=...). `messages`
  // is a JSON list of {"role": ..., "content": ...} objects.
  Expected<Rendering> render(const nlohmann::ordered_json& messages,
                             const RenderOptions& options) const;

  const std::string& source() const { return source_; }
  // The value of a special token given at parse time ("" when absent).
  std::string special_token(const std::string& name) const;

 private:
  std::string source_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// The template of a Hugging Face tokenizer folder: tokenizer_config.json's chat_template (a
// string, or a list of {"name", "template"} from which `name` is taken), with bos_token and
// eos_token (strings or AddedToken objects) as its special tokens.
Expected<ChatTemplate> load_template(const std::string& tokenizer_dir,
                                     const std::string& name = "default");

// The next turn of a multi-turn prompt, built by appending. `before` is the conversation the
// policy was prompted with (rendered with the generation prompt); `added` starts with the
// assistant message it sampled, followed by the new messages (the feedback as a user message).
// The turn-t prompt is the turn-(t-1) prompt, the sampled ids as generated, then `suffix`: the
// rendering of [before + added] from where the assistant's content ends (the end of the
// assistant message, the new messages, the generation prompt).
//
// The suffix opens with the template's end-of-turn marker (Qwen's "<|im_end|>", Llama's
// "<|eot_id|>") as a template span. If the sampler stopped on that token and kept it in the
// sampled ids, the caller leaves the suffix's copy out rather than repeat it.
//
// append_only is false when the template re-renders history so that the earlier prompt plus the
// sampled text is not a prefix of the new rendering (Qwen3 drops the think block of earlier
// answers); first_difference is then the byte where they part, and `full` lets the caller
// re-encode the whole prompt instead.
struct Continuation {
  bool append_only = false;
  Rendering suffix;
  size_t first_difference = 0;
  Rendering full;
};
Expected<Continuation> render_continuation(const ChatTemplate& tmpl,
                                           const nlohmann::ordered_json& before,
                                           const nlohmann::ordered_json& added,
                                           const RenderOptions& options);

}  // namespace leap::chat
