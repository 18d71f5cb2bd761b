// `leap tokenize`: a Hugging Face tokenizer (a save_pretrained folder or a tokenizer.json) on the
// command line, as the trainer uses it.
//   --input FILE        prints {"ids": [...]} for the file's text. Special-token strings are
//                       plain text unless --parse-special is given (the safe mode is the
//                       default because text from the sandbox or the model must never become a
//                       control token); non-special added tokens (Qwen3's <think>) always match.
//   --decode IDS.json   prints the text of {"ids": [...]} (or a bare [...]) as raw bytes.
//   --chat MSGS.json    renders the messages with the folder's chat template and prints
//                       {"text", "ids", "now"}; only the template's markers become special ids.
// A bad file is exit 2 naming the file and the field.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/subcommands.h"
#include "chat/chat_request.h"
#include "tokenizer/hf_tokenizer.h"

namespace leap::app {
namespace {

constexpr const char* kUsage =
    "--tokenizer DIR (--input FILE [--parse-special] [--add-special-tokens] | --decode IDS.json)";

struct TokenizeConfig {
  std::string tokenizer;
  std::string input;
  std::string decode;
  std::string chat;
  bool parse_special = false;
  bool add_special_tokens = false;
  int64_t now = 0;

  void declare(OptionSet& opts) {
    opts.add("tokenize.tokenizer", &tokenizer, "",
             "Folder written by save_pretrained (with tokenizer.json), or a tokenizer.json file.",
             {.alias = "tokenizer"});
    opts.add("tokenize.input", &input, "", "Text file to encode; prints {\"ids\": [...]}.",
             {.alias = "input"});
    opts.add("tokenize.parse_special", &parse_special, false,
             "Special-token strings in the input become their ids (default: plain text, the safe "
             "mode for untrusted text).",
             {.alias = "parse-special"});
    opts.add("tokenize.add_special_tokens", &add_special_tokens, false,
             "Apply the post-processor's template (e.g. Llama-3's <|begin_of_text|>).",
             {.alias = "add-special-tokens"});
    opts.add("tokenize.decode", &decode, "",
             "JSON file of ids ({\"ids\": [...]} or [...]); prints their text.",
             {.alias = "decode"});
    opts.add("tokenize.chat", &chat, "",
             "JSON file of chat messages (or {messages, tools, add_generation_prompt, variables}), "
             "rendered by the folder's chat template; prints {\"text\", \"ids\", \"now\"}.",
             {.alias = "chat"});
    opts.add("tokenize.now", &now, int64_t{0},
             "With --chat: the time (Unix seconds) strftime_now() prints; 0: now.", {.min = 0});
  }
};

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Expected<std::vector<int32_t>> read_ids(const std::string& path, int vocab_size) {
  LEAP_ASSIGN_OR_RETURN(std::string text, read_file(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid_input(path + ": not valid JSON");
  const nlohmann::json* arr = &j;
  std::string field = "(top level)";
  if (j.is_object()) {
    if (!j.contains("ids")) return invalid_input(path + ": field 'ids': missing");
    arr = &j["ids"];
    field = "ids";
  }
  if (!arr->is_array())
    return invalid_input(path + ": field '" + field + "': expected an array of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto& v = (*arr)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab_size)
      return invalid_input(path + ": field '" + (field == "ids" ? "ids" : "") + "[" +
                           std::to_string(i) + "]': expected a token id in [0, " +
                           std::to_string(vocab_size) + "), got " + v.dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// The chat mode: the folder's chat template (tokenizer_config.json) renders MSGS.json as
// transformers' apply_chat_template(messages, add_generation_prompt=True) does, and the text is
// encoded in one pass with special tokens recognised only in the template's own spans, so a
// message that contains "<|im_end|>" cannot close its turn. Prints {"text", "ids", "now"}:
// `now` is the strftime_now() time the rendering used (tokenize.now, else the current time).
int run_chat(const TokenizeConfig& cfg, const tokenizer::HfTokenizer& tok) {
  const int64_t now = cfg.now > 0 ? cfg.now : static_cast<int64_t>(std::time(nullptr));
  auto rendering = chat::render_chat_file(cfg.tokenizer, cfg.chat, now);
  if (!rendering) return report_error("tokenize", rendering.status());
  std::vector<std::pair<size_t, size_t>> markers;
  for (const chat::Span& sp : rendering->spans)
    if (sp.kind == chat::SpanKind::kTemplate) markers.emplace_back(sp.begin, sp.end);
  nlohmann::ordered_json out;
  out["text"] = rendering->text;
  out["ids"] = tok.encode_with_special_spans(rendering->text, markers);
  out["now"] = now;
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args) {
  OptionSet opts;
  TokenizeConfig cfg;
  cfg.declare(opts);
  if (int rc = parse_or_exit("tokenize", kUsage, args, opts); rc >= 0) return rc;
  const int modes = !cfg.input.empty() + !cfg.decode.empty() + !cfg.chat.empty();
  if (cfg.tokenizer.empty() || modes != 1)
    return report_error("tokenize",
                        invalid_input(std::string("give --tokenizer and exactly one of --input, "
                                                  "--decode, --chat\nusage: leap tokenize ") +
                                      kUsage));
  auto tok = tokenizer::load_hf_tokenizer(cfg.tokenizer);
  if (!tok) return report_error("tokenize", tok.status());

  if (!cfg.chat.empty()) return run_chat(cfg, **tok);
  if (!cfg.decode.empty()) {
    auto ids = read_ids(cfg.decode, (*tok)->vocab_size());
    if (!ids) return report_error("tokenize", ids.status());
    const std::string text = (*tok)->decode(*ids);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  auto text = read_file(cfg.input);
  if (!text) return report_error("tokenize", text.status());
  const std::vector<int32_t> ids = (*tok)->encode(*text, cfg.parse_special, cfg.add_special_tokens);
  std::string out = "{\"ids\": [";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace leap::app
