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
#include <set>
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
  // The names the template sets before it reads them at the top level (chat/root_symbols.h).
  std::shared_ptr<const std::set<std::string>> own_names_;
};

// The template of a Hugging Face tokenizer folder: tokenizer_config.json's chat_template (a
// string, or a list of {"name", "template"} from which `name` is taken), with bos_token and
// eos_token (strings or AddedToken objects) as its special tokens.
Expected<ChatTemplate> load_template(const std::string& tokenizer_dir,
                                     const std::string& name = "default");

}  // namespace leap::chat
