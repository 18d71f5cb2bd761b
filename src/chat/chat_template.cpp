// The public face of the chat-template module: parse once, render many times, and load a
// tokenizer folder's template (multi-turn prompts are rl/prompt_format.h's). TemplateError stops
// here and becomes a Status.
#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "chat/ast.h"
#include "chat/parser.h"
#include "chat/render.h"
#include "chat/root_symbols.h"
#include "chat/template_error.h"

namespace leap::chat {
namespace {

Status to_status(const TemplateError& e) {
  std::string where =
      e.line > 0 ? "chat template line " + std::to_string(e.line) + ": " : "chat template: ";
  return Status(e.code, where + e.message);
}

Rendering to_rendering(const Text& t) {
  Rendering r;
  r.text = t.bytes;
  for (size_t k = 0; k < t.bytes.size(); ++k) {
    SpanKind kind = t.origin_at(k) == Origin::kContent ? SpanKind::kContent : SpanKind::kTemplate;
    if (r.spans.empty() || r.spans.back().kind != kind) r.spans.push_back({k, k, kind});
    r.spans.back().end = k + 1;
  }
  return r;
}

}  // namespace

Rendering Rendering::tail(size_t from) const {
  Rendering r;
  from = std::min(from, text.size());
  r.text = text.substr(from);
  for (const Span& s : spans) {
    if (s.end <= from) continue;
    r.spans.push_back({std::max(s.begin, from) - from, s.end - from, s.kind});
  }
  return r;
}

Expected<ChatTemplate> ChatTemplate::parse(
    const std::string& source, std::vector<std::pair<std::string, std::string>> special_tokens) {
  ChatTemplate t;
  t.source_ = source;
  t.special_tokens_ = std::move(special_tokens);
  try {
    t.body_ = std::make_shared<const Body>(parse_template(source));
    t.own_names_ =
        std::make_shared<const std::set<std::string>>(names_undefined_until_set(*t.body_));
  } catch (const TemplateError& e) {
    return to_status(e);
  }
  return t;
}

std::string ChatTemplate::special_token(const std::string& name) const {
  for (const auto& [k, v] : special_tokens_) {
    if (k == name) return v;
  }
  return "";
}

namespace {

// The messages as the template sees them: content, except each message's role, which is the
// conversation's structure (the caller writes it: system, user, assistant), not text a user
// typed. A template that builds a marker from it ('<|' + message['role'] + '|>', as Phi-3.5 and
// Phi-4 do) then gets that marker encoded as its special token, as transformers does.
Value messages_value(const nlohmann::ordered_json& messages) {
  Array items;
  for (const auto& m : messages) {
    Object fields;
    for (const auto& [k, e] : m.items())
      fields.emplace_back(k, value_from_json(e, k == "role" ? Origin::kTemplate : Origin::kContent));
    Value v = Value::dict(std::move(fields));
    v.keys_are_content = true;
    items.push_back(std::move(v));
  }
  return Value::list(std::move(items));
}

}  // namespace

Expected<Rendering> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                         const RenderOptions& options) const {
  if (!messages.is_array()) return invalid_input("chat messages must be a JSON list of objects");
  for (const auto& m : messages) {
    if (!m.is_object()) return invalid_input("chat messages must be a JSON list of objects");
  }
  if (!options.variables.is_object())
    return invalid_input("chat template variables must be a JSON object");
  RenderContext ctx;
  ctx.now_unix_seconds = options.now_unix_seconds;
  // The order transformers uses: its keyword arguments, then the special tokens. The caller's
  // variables are template-side (options, not content).
  ctx.globals.emplace_back("messages", messages_value(messages));
  ctx.globals.emplace_back("tools", value_from_json(options.tools, Origin::kContent));
  ctx.globals.emplace_back("documents", Value::none());
  ctx.globals.emplace_back("add_generation_prompt", Value::boolean(options.add_generation_prompt));
  for (const auto& [k, v] : options.variables.items())
    ctx.globals.emplace_back(k, value_from_json(v, Origin::kTemplate));
  for (const auto& [k, v] : special_tokens_) ctx.globals.emplace_back(k, Value::template_string(v));
  try {
    return to_rendering(render_template(*body_, *own_names_, ctx));
  } catch (const TemplateError& e) {
    return to_status(e);
  }
}

Expected<ChatTemplate> load_template(const std::string& tokenizer_dir, const std::string& name) {
  const std::string path = tokenizer_dir + "/tokenizer_config.json";
  std::ifstream in(path);
  if (!in)
    return not_found(path + ": cannot open (is --tokenizer a Hugging Face tokenizer folder?)");
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return invalid_input(path + ": not valid JSON: " + e.what());
  }
  if (!config.is_object())
    return invalid_input(path + ": expected a JSON object");
  // transformers 4.47+ writes the template to its own file beside tokenizer_config.json, and
  // that file wins over a template in the config, as transformers loads them.
  const std::string jinja_path = tokenizer_dir + "/chat_template.jinja";
  if (std::ifstream jinja(jinja_path); jinja) {
    std::ostringstream text;
    text << jinja.rdbuf();
    config["chat_template"] = text.str();
  } else if (!config.contains("chat_template") || config["chat_template"].is_null()) {
    return invalid_input(path + ": no \"chat_template\" key and no chat_template.jinja beside it "
                                "(this tokenizer has no chat template)");
  }
  const auto& field = config["chat_template"];
  std::string source;
  if (field.is_string()) {
    source = field.get<std::string>();
  } else if (field.is_array()) {
    std::string names;
    for (const auto& entry : field) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
          !entry["name"].is_string() || !entry["template"].is_string()) {
        return invalid_input(path +
                             ": chat_template list entries need string \"name\" and \"template\"");
      }
      names += (names.empty() ? "" : ", ") + entry["name"].get<std::string>();
      if (entry["name"] == name) source = entry["template"].get<std::string>();
    }
    if (source.empty())
      return not_found(path + ": chat_template has no template named '" + name +
                       "' (has: " + names + ")");
  } else {
    return invalid_input(path + ": chat_template must be a string or a list of {name, template}");
  }
  std::vector<std::pair<std::string, std::string>> specials;
  for (const char* key : {"bos_token", "eos_token"}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    const auto& tok = config[key];
    if (tok.is_string()) {
      specials.emplace_back(key, tok.get<std::string>());
    } else if (tok.is_object() && tok.contains("content") && tok["content"].is_string()) {
      specials.emplace_back(key, tok["content"].get<std::string>());  // AddedToken form
    } else {
      return invalid_input(path + ": " + key + " must be a string or an object with \"content\"");
    }
  }
  auto parsed = ChatTemplate::parse(source, std::move(specials));
  if (!parsed) return parsed.status().with_context(path + ": chat_template");
  return parsed;
}

}  // namespace leap::chat
