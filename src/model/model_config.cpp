// config.json reading and writing with HF's key names and defaults (LlamaConfig, Qwen2Config,
// Qwen3Config).
#include "model/model_config.h"

#include <cmath>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/fs_util.h"

namespace leap::model {
namespace {

using json = nlohmann::json;

bool supported_type(const std::string& t) {
  return t == "llama" || t == "qwen2" || t == "qwen3";
}

// Reads an integer key; missing keys keep `fallback` (-1 fallback = required).
Status get_int(const json& j, const char* key, int* out, const std::string& where, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return invalid_input(fmt::format("{}: required key '{}' is missing", where, key));
    return Status::ok();
  }
  if (!it->is_number_integer())
    return invalid_input(
        fmt::format("{}: key '{}' must be an integer, got {}", where, key, it->dump()));
  *out = it->get<int>();
  return Status::ok();
}

Status get_double(const json& j, const char* key, double* out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number())
    return invalid_input(fmt::format("{}: key '{}' must be a number", where, key));
  *out = it->get<double>();
  return Status::ok();
}

Status get_bool(const json& j, const char* key, bool* out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean())
    return invalid_input(fmt::format("{}: key '{}' must be true or false", where, key));
  *out = it->get<bool>();
  return Status::ok();
}

// eos_token_id may be a list in HF configs; the first entry is used.
Status get_token_id(const json& j, const char* key, int* out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
    *out = (*it)[0].get<int>();
    return Status::ok();
  }
  return get_int(j, key, out, where, false);
}

}  // namespace

Status ModelConfig::validate(const std::string& where) const {
  auto bad = [&](const std::string& m) { return invalid_input(where + ": " + m); };
  if (!supported_type(model_type))
    return bad(fmt::format("model_type '{}' is not supported (llama, qwen2 or qwen3)", model_type));
  if (vocab_size <= 0) return bad("vocab_size must be > 0");
  if (hidden_size <= 0) return bad("hidden_size must be > 0");
  if (intermediate_size <= 0) return bad("intermediate_size must be > 0");
  if (num_hidden_layers <= 0) return bad("num_hidden_layers must be > 0");
  if (num_attention_heads <= 0) return bad("num_attention_heads must be > 0");
  if (num_key_value_heads <= 0 || num_attention_heads % num_key_value_heads != 0)
    return bad(fmt::format("num_key_value_heads {} must divide num_attention_heads {}",
                           num_key_value_heads, num_attention_heads));
  if (head_dim <= 0 || head_dim % 2 != 0)
    return bad(fmt::format("head_dim {} must be even and > 0", head_dim));
  if (max_position_embeddings <= 0) return bad("max_position_embeddings must be > 0");
  if (!(rope_theta > 0)) return bad("rope_theta must be > 0");
  if (!(rms_norm_eps > 0)) return bad("rms_norm_eps must be > 0");
  if (model_type == "qwen2" && (!qkv_bias || o_bias)) return bad("qwen2 has biases on q/k/v only");
  if (model_type != "qwen2" && qkv_bias != o_bias)
    return bad(model_type + "'s attention_bias puts biases on q, k, v and o alike");
  if (qk_norm != (model_type == "qwen3"))
    return bad("the per-head q/k norms are qwen3's, and qwen3 has them");
  if (bos_token_id >= vocab_size || eos_token_id >= vocab_size)
    return bad("bos_token_id/eos_token_id must be < vocab_size");
  return Status::ok();
}

Expected<ModelConfig> parse_model_config(const std::string& json_text, const std::string& where) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_input(where + ": not a JSON object");
  ModelConfig c;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string())
    c.model_type = it->get<std::string>();
  else
    return invalid_input(where + ": required key 'model_type' is missing (llama, qwen2 or qwen3)");
  if (!supported_type(c.model_type))
    return invalid_input(fmt::format("{}: model_type '{}' is not supported (llama, qwen2 or qwen3)",
                                     where, c.model_type));
  LEAP_RETURN_IF_ERROR(get_int(j, "vocab_size", &c.vocab_size, where, true));
  LEAP_RETURN_IF_ERROR(get_int(j, "hidden_size", &c.hidden_size, where, true));
  LEAP_RETURN_IF_ERROR(get_int(j, "intermediate_size", &c.intermediate_size, where, true));
  LEAP_RETURN_IF_ERROR(get_int(j, "num_hidden_layers", &c.num_hidden_layers, where, true));
  LEAP_RETURN_IF_ERROR(get_int(j, "num_attention_heads", &c.num_attention_heads, where, true));
  c.num_key_value_heads = c.num_attention_heads;
  LEAP_RETURN_IF_ERROR(get_int(j, "num_key_value_heads", &c.num_key_value_heads, where, false));
  // Qwen3Config's head_dim defaults to 128 whatever the width; LlamaConfig's and Qwen2Config's
  // to hidden_size / num_attention_heads.
  c.head_dim = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  if (c.model_type == "qwen3") c.head_dim = 128;
  LEAP_RETURN_IF_ERROR(get_int(j, "head_dim", &c.head_dim, where, false));
  c.max_position_embeddings = c.model_type == "llama" ? 2048 : 32768;  // LlamaConfig's; Qwen2/3's
  LEAP_RETURN_IF_ERROR(
      get_int(j, "max_position_embeddings", &c.max_position_embeddings, where, false));
  LEAP_RETURN_IF_ERROR(get_double(j, "rms_norm_eps", &c.rms_norm_eps, where));
  LEAP_RETURN_IF_ERROR(get_double(j, "rope_theta", &c.rope_theta, where));
  // transformers v5 moves rope_theta (and the rope type) into rope_parameters.
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object())
      return invalid_input(fmt::format("{}: '{}' must be an object", where, key));
    std::string type = "default";
    if (auto t = it->find("rope_type"); t != it->end() && t->is_string())
      type = t->get<std::string>();
    else if (auto t2 = it->find("type"); t2 != it->end() && t2->is_string())
      type = t2->get<std::string>();
    if (type == "llama3") {
      auto& rs = c.rope_scaling;
      rs.type = type;
      const std::string in = where + ": " + key;
      for (const char* k : {"factor", "low_freq_factor", "high_freq_factor",
                            "original_max_position_embeddings"})
        if (!it->contains(k))
          return invalid_input(fmt::format("{}: {}.{} is missing (rope_type llama3 needs it)",
                                           where, key, k));
      LEAP_RETURN_IF_ERROR(get_double(*it, "factor", &rs.factor, in));
      LEAP_RETURN_IF_ERROR(get_double(*it, "low_freq_factor", &rs.low_freq_factor, in));
      LEAP_RETURN_IF_ERROR(get_double(*it, "high_freq_factor", &rs.high_freq_factor, in));
      LEAP_RETURN_IF_ERROR(get_int(*it, "original_max_position_embeddings",
                                   &rs.original_max_position_embeddings, in, false));
      if (!(rs.factor > 0) || !(rs.low_freq_factor > 0) ||
          !(rs.high_freq_factor > rs.low_freq_factor) || rs.original_max_position_embeddings <= 0)
        return invalid_input(fmt::format(
            "{}: {} (llama3): need factor > 0, 0 < low_freq_factor < high_freq_factor and "
            "original_max_position_embeddings > 0",
            where, key));
    } else if (type != "default") {
      return unsupported(
          fmt::format("{}: {}.rope_type '{}' (RoPE scaling) is not supported; plain RoPE "
                      "(rope_type 'default') and Llama-3.1's 'llama3' are implemented",
                      where, key, type));
    }
    LEAP_RETURN_IF_ERROR(get_double(*it, "rope_theta", &c.rope_theta, where));
  }
  LEAP_RETURN_IF_ERROR(get_bool(j, "tie_word_embeddings", &c.tie_word_embeddings, where));
  bool attention_bias = false;
  LEAP_RETURN_IF_ERROR(get_bool(j, "attention_bias", &attention_bias, where));
  c.qkv_bias = c.model_type == "qwen2" || attention_bias;
  c.o_bias = c.model_type != "qwen2" && attention_bias;
  c.qk_norm = c.model_type == "qwen3";
  bool mlp_bias = false;
  LEAP_RETURN_IF_ERROR(get_bool(j, "mlp_bias", &mlp_bias, where));
  if (mlp_bias) return unsupported(where + ": mlp_bias = true is not supported");
  if (auto it = j.find("hidden_act");
      it != j.end() && it->is_string() && it->get<std::string>() != "silu")
    return unsupported(
        fmt::format("{}: hidden_act '{}' is not supported (silu)", where, it->get<std::string>()));
  bool sliding = false;
  LEAP_RETURN_IF_ERROR(get_bool(j, "use_sliding_window", &sliding, where));
  if (sliding) return unsupported(where + ": use_sliding_window = true is not supported");
  // transformers v5 writes each layer's attention kind; only full attention is implemented.
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array())
    for (const auto& t : *it)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        return unsupported(fmt::format(
            "{}: layer_types holds {} (only \"full_attention\" is supported)", where, t.dump()));
  LEAP_RETURN_IF_ERROR(get_token_id(j, "bos_token_id", &c.bos_token_id, where));
  LEAP_RETURN_IF_ERROR(get_token_id(j, "eos_token_id", &c.eos_token_id, where));
  LEAP_RETURN_IF_ERROR(c.validate(where));
  return c;
}

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
  const int half = cfg.head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i)
    inv[static_cast<size_t>(i)] =
        1.0f / std::pow(static_cast<float>(cfg.rope_theta),
                        static_cast<float>(2 * i) / static_cast<float>(cfg.head_dim));
  const auto& rs = cfg.rope_scaling;
  if (rs.type != "llama3") return inv;
  // transformers' _compute_llama3_parameters, in fp32 as torch computes it.
  const auto factor = static_cast<float>(rs.factor);
  const auto low = static_cast<float>(rs.low_freq_factor);
  const auto high = static_cast<float>(rs.high_freq_factor);
  const auto old_len = static_cast<float>(rs.original_max_position_embeddings);
  const float low_freq_wavelen = old_len / low, high_freq_wavelen = old_len / high;
  for (float& f : inv) {
    const float wavelen = static_cast<float>(2.0 * M_PI) / f;
    const float scaled = wavelen > low_freq_wavelen ? f / factor : f;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const float smooth = (old_len / wavelen - low) / (high - low);
      f = (1.0f - smooth) * scaled / factor + smooth * scaled;
    } else {
      f = scaled;
    }
  }
  return inv;
}

Expected<ModelConfig> read_model_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.status();
  return parse_model_config(*text, path);
}

std::string model_config_to_json(const ModelConfig& c, const std::string& torch_dtype) {
  json j;
  j["architectures"] = {c.model_type == "qwen2"   ? "Qwen2ForCausalLM"
                        : c.model_type == "qwen3" ? "Qwen3ForCausalLM"
                                                  : "LlamaForCausalLM"};
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type == "llama3") {
    const auto& rs = c.rope_scaling;
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", rs.factor},
                         {"low_freq_factor", rs.low_freq_factor},
                         {"high_freq_factor", rs.high_freq_factor},
                         {"original_max_position_embeddings", rs.original_max_position_embeddings}};
  }
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  j["torch_dtype"] = torch_dtype;
  if (c.model_type == "llama") {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = false;
  } else {
    if (c.model_type == "qwen3") j["attention_bias"] = c.qkv_bias;
    j["use_sliding_window"] = false;
  }
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  return j.dump(2) + "\n";
}

Status write_model_config(const std::string& path, const ModelConfig& cfg, const std::string& torch_dtype) {
  return write_file_atomic(path, model_config_to_json(cfg, torch_dtype));
}

}  // namespace leap::model
