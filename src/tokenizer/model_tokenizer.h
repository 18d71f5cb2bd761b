// The tokenizer of a policy folder, chosen by what the folder holds: a Hugging Face
// tokenizer.json (with tokenizer_config.json beside it) gives an HfTokenizer; a folder without
// one is one of the project's byte-level policies and gets the ByteTokenizer.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "model/tokenizer.h"

namespace leap::tokenizer {

// Errors name the file and the field (exit code 2).
Expected<std::unique_ptr<model::Tokenizer>> load_model_tokenizer(const std::string& model_dir);

// Checks that a model's embedding rows cover the tokenizer: vocab_size may exceed the tokenizer
// (padding to a multiple of 64 or 128, as Qwen2.5 does; padded ids are never sampled) but never
// fall short of it.
Status check_vocab_fits(int model_vocab_size, const model::Tokenizer& tokenizer,
                        const std::string& model_dir);

}  // namespace leap::tokenizer
