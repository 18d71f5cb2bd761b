// The ids that end generation, as transformers' generate() takes them: generation_config.json's
// eos_token_id (an int or a list: Llama-3.1 and Qwen2.5 stop on several) and config.json's,
// plus the tokenizer's EOS; a policy folder without either file keeps the tokenizer's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace leap::model {

// The eos_token_id values of DIR/generation_config.json and DIR/config.json, in that order,
// without repeats, then `tokenizer_eos` (if >= 0). Errors name the file and the field.
Expected<std::vector<int32_t>> read_eos_ids(const std::string& model_dir, int32_t tokenizer_eos);

// The files of a Hugging Face model folder that are not weights or config.json: the tokenizer's
// and generation's. Checkpoints copy them, so every checkpoint folder is a complete model folder.
const std::vector<std::string>& model_side_files();
// Copies those of them that `from_dir` has into `to_dir` (nothing when they are the same folder).
Status copy_model_side_files(const std::string& from_dir, const std::string& to_dir);

}  // namespace leap::model
