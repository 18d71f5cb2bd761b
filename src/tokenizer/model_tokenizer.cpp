// See model_tokenizer.h.
#include "tokenizer/model_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>

#include "model/byte_tokenizer.h"
#include "tokenizer/hf_tokenizer.h"

namespace leap::tokenizer {

Expected<std::unique_ptr<model::Tokenizer>> load_model_tokenizer(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(model_dir) / "tokenizer.json", ec))
    return std::unique_ptr<model::Tokenizer>(std::make_unique<model::ByteTokenizer>());
  LEAP_ASSIGN_OR_RETURN(auto hf, load_hf_tokenizer(model_dir));
  return std::unique_ptr<model::Tokenizer>(std::move(hf));
}

Status check_vocab_fits(int model_vocab_size, const model::Tokenizer& tokenizer,
                        const std::string& model_dir) {
  if (model_vocab_size >= tokenizer.vocab_size()) return Status::ok();
  return invalid_input(fmt::format(
      "{}/config.json: vocab_size {} is smaller than the tokenizer's {} ids ({}); the "
      "embedding must have a row for every token id (a folder without tokenizer.json uses the "
      "byte-level tokenizer)",
      model_dir, model_vocab_size, tokenizer.vocab_size(), tokenizer.describe()));
}

}  // namespace leap::tokenizer
