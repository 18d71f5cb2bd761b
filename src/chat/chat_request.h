// A conversation read from a file and rendered with a tokenizer folder's chat template: what
// `leap tokenize --tokenizer DIR --chat MESSAGES.json` prints (the tokenize subcommand calls
// these; the encoding into ids belongs to the tokenizer).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "common/status.h"

namespace leap::chat {

struct ChatRequest {
  nlohmann::ordered_json messages;
  RenderOptions options;
};

// MESSAGES.json is a list of {"role", "content", ...} objects, or an object with "messages" and
// optionally "tools", "add_generation_prompt" (default true) and "variables" (template kwargs,
// added to enable_thinking=false). Errors name the file and the message or key; exit code 2.
Expected<ChatRequest> read_chat_request(const std::string& path, std::int64_t now_unix_seconds);

// {"text": ..., "spans": [{"kind": "template" | "content", "text": ...}, ...]}
nlohmann::ordered_json rendering_to_json(const Rendering& r);

// load_template(tokenizer_dir), then renders the conversation of `messages_path`.
Expected<Rendering> render_chat_file(const std::string& tokenizer_dir,
                                     const std::string& messages_path,
                                     std::int64_t now_unix_seconds);

}  // namespace leap::chat
