// Reads a conversation file for rendering; every malformed piece is named with its file and place.
#include "chat/chat_request.h"

#include <fstream>

namespace leap::chat {

Expected<ChatRequest> read_chat_request(const std::string& path, std::int64_t now_unix_seconds) {
  std::ifstream in(path);
  if (!in) return not_found(path + ": cannot open the chat messages file");
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return invalid_input(path + ": not valid JSON: " + e.what());
  }
  ChatRequest req;
  req.options.now_unix_seconds = now_unix_seconds;
  if (doc.is_array()) {
    req.messages = std::move(doc);
  } else if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      if (key == "messages") {
        req.messages = value;
      } else if (key == "tools") {
        if (!value.is_array() && !value.is_null())
          return invalid_input(path + ": \"tools\" must be a list or null");
        req.options.tools = value;
      } else if (key == "add_generation_prompt") {
        if (!value.is_boolean())
          return invalid_input(path + ": \"add_generation_prompt\" must be true or false");
        req.options.add_generation_prompt = value.get<bool>();
      } else if (key == "variables") {
        if (!value.is_object()) return invalid_input(path + ": \"variables\" must be an object");
        for (const auto& [k, v] : value.items()) req.options.variables[k] = v;
      } else {
        return invalid_input(path + ": unknown key \"" + key +
                             "\" (expected messages, tools, add_generation_prompt, variables)");
      }
    }
  } else {
    return invalid_input(path + ": expected a list of messages or an object with \"messages\"");
  }
  if (!req.messages.is_array()) return invalid_input(path + ": \"messages\" must be a list");
  for (size_t k = 0; k < req.messages.size(); ++k) {
    const auto& m = req.messages[k];
    const std::string where = path + ": message " + std::to_string(k);
    if (!m.is_object()) return invalid_input(where + " is not an object");
    if (!m.contains("role") || !m["role"].is_string())
      return invalid_input(where + " has no string \"role\"");
    if (!m.contains("content") && !m.contains("tool_calls")) {
      return invalid_input(where + " has neither \"content\" nor \"tool_calls\"");
    }
  }
  return req;
}

nlohmann::ordered_json rendering_to_json(const Rendering& r) {
  nlohmann::ordered_json spans = nlohmann::ordered_json::array();
  for (const Span& s : r.spans) {
    spans.push_back({{"kind", s.kind == SpanKind::kContent ? "content" : "template"},
                     {"text", r.text.substr(s.begin, s.end - s.begin)}});
  }
  return {{"text", r.text}, {"spans", std::move(spans)}};
}

Expected<Rendering> render_chat_file(const std::string& tokenizer_dir,
                                     const std::string& messages_path,
                                     std::int64_t now_unix_seconds) {
  LEAP_ASSIGN_OR_RETURN(ChatTemplate tmpl, load_template(tokenizer_dir));
  LEAP_ASSIGN_OR_RETURN(ChatRequest req, read_chat_request(messages_path, now_unix_seconds));
  auto r = tmpl.render(req.messages, req.options);
  if (!r) return r.status().with_context(tokenizer_dir + "/tokenizer_config.json");
  return r;
}

}  // namespace leap::chat
