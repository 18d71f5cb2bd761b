// See prompt_format.h.
#include "rl/prompt_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tokenizer/utf8.h"

namespace leap::rl {

namespace {

// Stands in for an answer's text when finding what the template writes after it: no template
// writes these brackets itself, and they are not whitespace, which `| trim` would strip. A
// counter is added until no message holds it (feedback may quote anything).
constexpr std::string_view kAnswerSentinel = "\u27e6LEAP_ANSWER\u27e7";

bool any_content_holds(const nlohmann::ordered_json& messages, const std::string& text) {
  for (const auto& m : messages)
    if (m.contains("content") && m["content"].is_string() &&
        m["content"].get_ref<const std::string&>().find(text) != std::string::npos)
      return true;
  return false;
}

// Role headers as text. An answer that ends with a newline is not given a second one, so the
// text a policy samples ("...```\n### End") is exactly what a re-rendering shows.
constexpr const char* kPlainTemplate =
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}{{ m.content }}{{ '\\n\\n' }}"
    "{%- elif m.role == 'user' -%}{{ '### User\\n' }}{{ m.content }}{{ '\\n\\n' }}"
    "{%- else -%}{{ '### Assistant\\n' }}{{ m.content }}"
    "{%- if not m.content.endswith('\\n') -%}{{ '\\n' }}{%- endif -%}{{ '### End\\n\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '### Assistant\\n' }}{%- endif -%}";

constexpr const char* kChatmlTemplate =
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m.role + '\\n' }}{{ m.content }}{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";

std::vector<std::pair<size_t, size_t>> template_spans(const chat::Rendering& r) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& s : r.spans)
    if (s.kind == chat::SpanKind::kTemplate) out.emplace_back(s.begin, s.end);
  return out;
}

// A format is checked once, at start-up, on a conversation like the ones it will render: a
// template that fails on it (raise_exception on a role order, no assistant content) is an exit-2
// error naming the template before any rank starts work.
Expected<PromptFormat> checked(PromptFormat format) {
  nlohmann::ordered_json head = nlohmann::ordered_json::array();
  head.push_back({{"role", "system"}, {"content", "s"}});
  head.push_back({{"role", "user"}, {"content", "u"}});
  nlohmann::ordered_json after = nlohmann::ordered_json::array();
  after.push_back({{"role", "user"}, {"content", "f"}});
  Status st = format.render(head, true).status();
  if (st) st = format.render_after_answer(head, "a", after, true).status();
  if (st) st = format.render_after_answer(head, "a", nlohmann::ordered_json::array(), false).status();
  if (!st)
    return st.with_context("prompt.chat_template = " + format.options().name +
                           ": the template cannot render a system, user, assistant, user conversation");
  return format;
}

bool has_model_template(const std::string& model_dir) {
  if (std::filesystem::exists(std::filesystem::path(model_dir) / "chat_template.jinja")) return true;
  std::ifstream in(std::filesystem::path(model_dir) / "tokenizer_config.json");
  if (!in) return false;
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("chat_template") && !j["chat_template"].is_null();
}

}  // namespace

PromptFormat::PromptFormat(chat::ChatTemplate tmpl, const model::Tokenizer& tokenizer,
                           PromptFormatOptions o)
    : tmpl_(std::move(tmpl)), tokenizer_(tokenizer), o_(std::move(o)) {}

Expected<chat::Rendering> PromptFormat::render(const nlohmann::ordered_json& messages,
                                               bool generation_prompt) const {
  chat::RenderOptions ro = o_.render;
  ro.add_generation_prompt = generation_prompt;
  return tmpl_.render(messages, ro);
}

Expected<chat::Rendering> PromptFormat::render_after_answer(const nlohmann::ordered_json& before,
                                                            std::string_view answer,
                                                            const nlohmann::ordered_json& after,
                                                            bool generation_prompt) const {
  const size_t last = answer.find_last_not_of(" \t\r\n");
  const std::string_view trailing = answer.substr(last == std::string_view::npos ? 0 : last + 1);
  std::string sentinel(kAnswerSentinel);
  for (int k = 1; any_content_holds(before, sentinel) || any_content_holds(after, sentinel); ++k)
    sentinel = std::string(kAnswerSentinel) + std::to_string(k);
  nlohmann::ordered_json all = before;
  all.push_back({{"role", "assistant"}, {"content", sentinel + std::string(trailing)}});
  for (const auto& m : after) all.push_back(m);
  LEAP_ASSIGN_OR_RETURN(chat::Rendering r, render(all, generation_prompt));
  const size_t at = r.text.find(sentinel);
  if (at == std::string::npos)
    return invalid_input(fmt::format(
        "the {} chat template does not print an assistant message's content, so a multi-turn "
        "prompt cannot follow the policy's answer (set prompt.chat_template)",
        o_.name));
  size_t from = at + sentinel.size();
  // The answer's own trailing whitespace, when the template kept it, is the answer's, not the
  // template's.
  if (std::string_view(r.text).substr(from).starts_with(trailing)) from += trailing.size();
  return r.tail(from);
}

std::vector<int32_t> PromptFormat::encode(const chat::Rendering& r, bool with_bos) const {
  std::vector<int32_t> ids;
  if (with_bos && o_.add_bos) ids = tokenizer_.bos_prefix();
  chat::Rendering valid;
  const chat::Rendering* use = &r;
  if (!tokenizer::is_valid_utf8(r.text)) {
    for (const auto& span : r.spans) {
      const size_t begin = valid.text.size();
      valid.text += tokenizer::repair_utf8(std::string_view(r.text).substr(span.begin, span.end - span.begin));
      valid.spans.push_back({begin, valid.text.size(), span.kind});
    }
    use = &valid;
  }
  auto body = tokenizer_.encode_with_special_spans(use->text, template_spans(*use));
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::vector<int32_t> PromptFormat::encode_text(std::string_view text) const {
  return tokenizer_.encode(text, /*allow_special=*/false);
}

SplitAnswer PromptFormat::split_answer(std::span<const int32_t> ids) const {
  SplitAnswer out;
  if (!ids.empty()) {
    for (int32_t eos : o_.eos_ids)
      if (ids.back() == eos) {
        out.content = tokenizer_.decode(ids.first(ids.size() - 1));
        out.stop = out.stop_core = tokenizer_.token_bytes(eos);
        return out;
      }
  }
  out.content = tokenizer_.decode(ids);
  size_t cut = std::string::npos;
  for (const auto& s : o_.stop_strings) {
    const size_t at = s.empty() ? std::string::npos : out.content.find(s);
    if (at < cut || (at == cut && at != std::string::npos && s.size() > out.stop_core.size())) {
      cut = at;
      out.stop_core = s;
    }
  }
  if (cut != std::string::npos) {
    out.stop = out.content.substr(cut);
    out.content.resize(cut);
  }
  return out;
}

size_t PromptFormat::sampled_overlap(const SplitAnswer& answer, std::string_view rest) const {
  if (answer.stop_core.empty()) return 0;
  size_t k = 0;
  while (k < rest.size() && !rest.substr(k).starts_with(answer.stop_core) &&
         (rest[k] == ' ' || rest[k] == '\t' || rest[k] == '\n' || rest[k] == '\r'))
    ++k;
  if (!rest.substr(k).starts_with(answer.stop_core)) return 0;
  k += answer.stop_core.size();
  // The sampled token that completed the stop may hold more bytes; keep the template's text
  // only past what they already say.
  for (size_t j = answer.stop_core.size(); j < answer.stop.size() && k < rest.size() &&
                                          rest[k] == answer.stop[j];
       ++j)
    ++k;
  return k;
}

std::optional<std::string> PromptFormat::append_difference() const {
  nlohmann::ordered_json head = nlohmann::ordered_json::array();
  head.push_back({{"role", "system"}, {"content", "s"}});
  head.push_back({{"role", "user"}, {"content", "u"}});
  nlohmann::ordered_json after = nlohmann::ordered_json::array();
  after.push_back({{"role", "user"}, {"content", "f"}});
  nlohmann::ordered_json whole = head;
  whole.push_back({{"role", "assistant"}, {"content", "a"}});
  whole.push_back(after[0]);
  auto turn1 = render(head, true);
  auto rest = render_after_answer(head, "a", after, true);
  auto full = render(whole, true);
  if (!turn1 || !rest || !full) return std::nullopt;  // make_prompt_format refuses such templates
  const std::string appended = turn1->text + "a" + rest->text;
  if (appended == full->text) return std::nullopt;
  const size_t at = static_cast<size_t>(
      std::mismatch(appended.begin(), appended.end(), full->text.begin(), full->text.end()).first - appended.begin());
  auto shown = [&](const std::string& s) {
    std::string out;
    for (char c : s.substr(at, 32)) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  };
  return fmt::format("after byte {} of a probe conversation, appending gives \"{}\" where the template renders \"{}\"",
                     at, shown(appended), shown(full->text));
}

std::string PromptFormat::describe() const {
  std::string out = fmt::format("{} chat template, {} multi-turn prompts, {}; answers end at ids [{}]", o_.name,
                                o_.multi_turn == MultiTurn::kAppend ? "appended" : "re-rendered",
                                tokenizer_.describe(), fmt::join(o_.eos_ids, ", "));
  if (!o_.stop_strings.empty()) {
    std::vector<std::string> quoted;
    for (const auto& s : o_.stop_strings) quoted.push_back(nlohmann::json(s).dump());
    out += fmt::format(" or at the text {}", fmt::join(quoted, ", "));
  }
  if (o_.render.now_unix_seconds)
    out += fmt::format("; strftime_now pinned to {} (prompt.now)", *o_.render.now_unix_seconds);
  return out;
}

std::optional<std::string> builtin_template_source(const std::string& name) {
  if (name == "plain") return std::string(kPlainTemplate);
  if (name == "chatml") return std::string(kChatmlTemplate);
  return std::nullopt;
}

std::string resolve_chat_template(const std::string& chat_template, const std::string& model_dir) {
  if (chat_template != "auto") return chat_template;
  return has_model_template(model_dir) ? "model" : "plain";
}

std::vector<std::string> template_stop_strings(const std::string& resolved_name) {
  if (resolved_name == "plain") return {"### End"};
  if (resolved_name == "chatml") return {"<|im_end|>"};
  return {};
}

std::optional<int32_t> model_template_end_of_turn(const std::string& model_dir,
                                                  const model::Tokenizer& tokenizer) {
  if (!has_model_template(model_dir)) return std::nullopt;
  auto tmpl = chat::load_template(model_dir);
  if (!tmpl) return std::nullopt;  // make_prompt_format reports it
  PromptFormatOptions o;
  o.name = "model";
  o.render.now_unix_seconds = 0;
  const PromptFormat format(std::move(*tmpl), tokenizer, std::move(o));
  nlohmann::ordered_json head = nlohmann::ordered_json::array();
  head.push_back({{"role", "user"}, {"content", "u"}});
  auto tail = format.render_after_answer(head, "a", nlohmann::ordered_json::array(), false);
  if (!tail) return std::nullopt;
  std::string_view text = tail->text;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  const std::vector<int32_t> ids = tokenizer.encode(text.substr(first), /*allow_special=*/true);
  if (ids.empty()) return std::nullopt;
  const auto added = tokenizer.special_id(tokenizer.token_bytes(ids[0]));
  if (!added || *added != ids[0]) return std::nullopt;
  return ids[0];
}

Expected<PromptFormat> make_prompt_format(const std::string& chat_template,
                                          const std::string& model_dir,
                                          const model::Tokenizer& tokenizer,
                                          std::vector<int32_t> eos_ids, MultiTurn multi_turn,
                                          int64_t now_unix_seconds) {
  PromptFormatOptions o;
  o.eos_ids = std::move(eos_ids);
  o.multi_turn = multi_turn;
  o.name = resolve_chat_template(chat_template, model_dir);
  if (o.name == "model") {
    auto tmpl = chat::load_template(model_dir);
    if (!tmpl)
      return tmpl.status().with_context(
          "prompt.chat_template = model (use plain or chatml for a model without a template)");
    // Only a template that prints the date gets (and records) one.
    if (tmpl->source().find("strftime_now") != std::string::npos)
      o.render.now_unix_seconds = now_unix_seconds;
    return checked(PromptFormat(std::move(*tmpl), tokenizer, std::move(o)));
  }
  auto source = builtin_template_source(o.name);
  if (!source)
    return invalid_input(fmt::format(
        "prompt.chat_template: '{}' is not a template (use auto, model, plain or chatml)",
        chat_template));
  auto tmpl = chat::ChatTemplate::parse(*source, {});
  if (!tmpl) return tmpl.status().with_context("the built-in " + o.name + " template");
  o.add_bos = true;
  o.stop_strings = template_stop_strings(o.name);
  return checked(PromptFormat(std::move(*tmpl), tokenizer, std::move(o)));
}

}  // namespace leap::rl
