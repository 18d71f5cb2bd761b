// TemplateProcessing as tokenizer.json writes it: "single" is a list of {"SpecialToken": {"id":
// NAME}} and {"Sequence": {"id": "A"}} items; "special_tokens" maps NAME to its "ids".
#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

namespace leap::tokenizer {

Status PostProcessor::parse_into(const nlohmann::json& j, const std::string& field,
                                 PostProcessor& p) {
  if (j.is_null()) return Status::ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return invalid_input("field '" + field + "': expected an object with a string 'type'");
  const std::string type = j["type"];
  if (type == "ByteLevel") return Status::ok();
  if (type == "Sequence") {
    if (!j.contains("processors") || !j["processors"].is_array())
      return invalid_input("field '" + field + ".processors': expected an array");
    for (size_t i = 0; i < j["processors"].size(); ++i)
      LEAP_RETURN_IF_ERROR(
          parse_into(j["processors"][i], field + ".processors[" + std::to_string(i) + "]", p));
    return Status::ok();
  }
  if (type != "TemplateProcessing")
    return unsupported("field '" + field + ".type': unsupported post-processor '" + type +
                       "' (supported: TemplateProcessing, ByteLevel, Sequence, null)");
  if (!j.contains("single") || !j["single"].is_array())
    return invalid_input("field '" + field + ".single': expected an array");
  const nlohmann::json specials = j.value("special_tokens", nlohmann::json::object());
  p.single_.clear();
  p.has_template_ = true;
  for (size_t i = 0; i < j["single"].size(); ++i) {
    const std::string where = field + ".single[" + std::to_string(i) + "]";
    const auto& item = j["single"][i];
    Piece piece;
    if (item.contains("Sequence")) {
      piece.is_sequence = true;
    } else if (item.contains("SpecialToken") && item["SpecialToken"].contains("id") &&
               item["SpecialToken"]["id"].is_string()) {
      const std::string name = item["SpecialToken"]["id"];
      if (!specials.contains(name) || !specials[name].contains("ids") ||
          !specials[name]["ids"].is_array())
        return invalid_input("field '" + field + ".special_tokens': no ids for '" + name +
                             "' (used by " + where + ")");
      for (const auto& id : specials[name]["ids"]) {
        if (!id.is_number_integer())
          return invalid_input("field '" + field + ".special_tokens." + name +
                               ".ids': expected ids");
        piece.special.push_back(id.get<int32_t>());
      }
    } else {
      return invalid_input("field '" + where +
                           "': expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    p.single_.push_back(std::move(piece));
  }
  return Status::ok();
}

Expected<PostProcessor> PostProcessor::from_json(const nlohmann::json& j,
                                                 const std::string& field) {
  PostProcessor p;
  LEAP_RETURN_IF_ERROR(parse_into(j, field, p));
  return p;
}

std::vector<int32_t> PostProcessor::apply_single(const std::vector<int32_t>& ids) const {
  if (!has_template_) return ids;
  std::vector<int32_t> out;
  out.reserve(ids.size() + 4);
  for (const Piece& p : single_) {
    if (p.is_sequence)
      out.insert(out.end(), ids.begin(), ids.end());
    else
      out.insert(out.end(), p.special.begin(), p.special.end());
  }
  return out;
}

std::vector<int32_t> PostProcessor::single_prefix() const {
  std::vector<int32_t> out;
  for (const Piece& p : single_) {
    if (p.is_sequence) break;
    out.insert(out.end(), p.special.begin(), p.special.end());
  }
  return out;
}

}  // namespace leap::tokenizer
