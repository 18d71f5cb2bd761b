// See generation_config.h.
#include "model/generation_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fs_util.h"

namespace leap::model {

namespace {

Status add_ids(const std::filesystem::path& file, std::vector<int32_t>* ids) {
  std::ifstream in(file);
  if (!in) return Status::ok();  // an optional file
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_input(file.string() + ": not a JSON object");
  auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return Status::ok();
  std::vector<nlohmann::json> values = it->is_array() ? it->get<std::vector<nlohmann::json>>()
                                                      : std::vector<nlohmann::json>{*it};
  for (const auto& v : values) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return invalid_input(file.string() +
                           ": field 'eos_token_id': expected a token id or a list of them");
    const auto id = static_cast<int32_t>(v.get<int64_t>());
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
  }
  return Status::ok();
}

}  // namespace

Expected<std::vector<int32_t>> read_eos_ids(const std::string& model_dir, int32_t tokenizer_eos) {
  std::vector<int32_t> ids;
  const std::filesystem::path dir = model_dir;
  LEAP_RETURN_IF_ERROR(add_ids(dir / "generation_config.json", &ids));
  LEAP_RETURN_IF_ERROR(add_ids(dir / "config.json", &ids));
  if (tokenizer_eos >= 0 && std::find(ids.begin(), ids.end(), tokenizer_eos) == ids.end())
    ids.push_back(tokenizer_eos);
  return ids;
}

const std::vector<std::string>& model_side_files() {
  static const std::vector<std::string> kFiles = {
      "tokenizer.json",   "tokenizer_config.json", "special_tokens_map.json",
      "generation_config.json", "vocab.json",      "merges.txt", "added_tokens.json",
      "chat_template.jinja"};
  return kFiles;
}

Status copy_model_side_files(const std::string& from_dir, const std::string& to_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (from_dir.empty() || fs::equivalent(from_dir, to_dir, ec)) return Status::ok();
  for (const auto& name : model_side_files()) {
    const fs::path src = fs::path(from_dir) / name;
    if (!fs::exists(src, ec)) continue;
    // Through an atomic write (fsync'd), as the checkpoint's own files are.
    auto text = read_file(src.string());
    if (!text) return io_error("cannot copy '" + src.string() + "' into '" + to_dir + "': " + text.status().message());
    LEAP_RETURN_IF_ERROR(write_file_atomic((fs::path(to_dir) / name).string(), *text));
  }
  return Status::ok();
}

}  // namespace leap::model
