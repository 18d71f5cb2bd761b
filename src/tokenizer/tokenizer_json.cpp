// Reading tokenizer.json (and tokenizer_config.json beside it) into an HfTokenizer. Every error
// names the file and the JSON field, and an unsupported component names itself and what is
// supported, so the user knows which file to fix or which family is not covered.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

namespace leap::tokenizer {
namespace {

namespace fs = std::filesystem;

Expected<nlohmann::json> read_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return not_found(file.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_input(file.string() + ": not valid JSON");
  return j;
}

// tokenizer_config.json writes a token as "<s>" or as {"content": "<s>", ...}.
std::string token_name(const nlohmann::json& cfg, const char* key) {
  if (!cfg.contains(key)) return {};
  const auto& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return {};
}

Status check_decoder(const nlohmann::json& j, bool& byte_level) {
  byte_level = false;
  if (j.is_null()) return Status::ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return invalid_input("field 'decoder': expected an object with a string 'type'");
  const std::string type = j["type"];
  if (type == "ByteLevel") {
    byte_level = true;
    return Status::ok();
  }
  return unsupported("field 'decoder.type': unsupported decoder '" + type +
                     "' (supported: ByteLevel, null)");
}

Expected<HfTokenizerParts> parse_parts(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_input("expected a JSON object at the top level");
  // "truncation" and "padding" are ignored: transformers resets both on every encode, and LEAP
  // does its own (prompt.max_prompt_tokens); some re-saved tokenizers carry them set.
  if (!j.contains("model")) return invalid_input("field 'model': missing");
  const nlohmann::json null_json;
  auto get = [&](const char* key) -> const nlohmann::json& {
    return j.contains(key) ? j[key] : null_json;
  };
  HfTokenizerParts p;
  LEAP_ASSIGN_OR_RETURN(p.normalizer, Normalizer::from_json(get("normalizer"), "normalizer"));
  LEAP_ASSIGN_OR_RETURN(p.pre_tokenizer,
                        PreTokenizer::from_json(get("pre_tokenizer"), "pre_tokenizer"));
  LEAP_ASSIGN_OR_RETURN(p.model, BpeModel::from_json(j["model"], "model"));
  LEAP_ASSIGN_OR_RETURN(p.post_processor,
                        PostProcessor::from_json(get("post_processor"), "post_processor"));
  LEAP_ASSIGN_OR_RETURN(p.added_tokens, parse_added_tokens(get("added_tokens"), "added_tokens"));
  LEAP_RETURN_IF_ERROR(check_decoder(get("decoder"), p.byte_level_decoder));
  return p;
}

}  // namespace

Expected<std::unique_ptr<HfTokenizer>> load_hf_tokenizer(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  fs::path config;
  if (fs::is_directory(file, ec)) {
    config = file / "tokenizer_config.json";
    file = file / "tokenizer.json";
    if (!fs::exists(file, ec))
      return not_found(file.string() +
                       ": no tokenizer.json in the folder (save the tokenizer with a fast "
                       "tokenizer's save_pretrained, which writes it)");
  } else if (!fs::exists(file, ec)) {
    return not_found(path + ": no such file or folder");
  } else {
    config = file.parent_path() / "tokenizer_config.json";
  }
  LEAP_ASSIGN_OR_RETURN(nlohmann::json j, read_json(file));
  auto parts = parse_parts(j);
  if (!parts) return parts.status().with_context(file.string());
  if (fs::exists(config, ec)) {
    LEAP_ASSIGN_OR_RETURN(nlohmann::json cfg, read_json(config));
    if (!cfg.is_object()) return invalid_input(config.string() + ": expected a JSON object");
    parts->eos_token = token_name(cfg, "eos_token");
    parts->pad_token = token_name(cfg, "pad_token");
    parts->bos_token = token_name(cfg, "bos_token");
    if (cfg.contains("add_bos_token")) {
      if (!cfg["add_bos_token"].is_boolean())
        return invalid_input(config.string() + ": field 'add_bos_token': expected true or false");
      parts->add_bos_token = cfg["add_bos_token"].get<bool>();
    }
  }
  return std::make_unique<HfTokenizer>(std::move(*parts));
}

}  // namespace leap::tokenizer
