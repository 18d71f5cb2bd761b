// `leap tokenize`: a Hugging Face tokenizer (a save_pretrained folder or a tokenizer.json) on the
// command line, as the trainer uses it.
//   --input FILE        prints {"ids": [...]} for the file's text. Special-token strings are
//                       plain text unless --parse-special is given (the safe mode is the
//                       default because text from the sandbox or the model must never become a
//                       control token); non-special added tokens (Qwen3's <think>) always match.
//   --decode IDS.json   prints the text of {"ids": [...]} (or a bare [...]) as raw bytes.
//   --chat MSGS.json    the chat template's mode (its own module; see run_chat below).
// A bad file is exit 2 naming the file and the field.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/subcommands.h"
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
             "JSON file of chat messages, rendered by the chat template.", {.alias = "chat"});
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

// The chat mode belongs to the chat-template module: it renders MSGS.json with the folder's
// template, then encodes the result here with parse_special on (the template's own markers).
int run_chat(const TokenizeConfig& /*cfg*/, const tokenizer::HfTokenizer& /*tok*/) {
  return report_error("tokenize",
                      unsupported("--chat: chat templates are not built yet in this version"));
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
