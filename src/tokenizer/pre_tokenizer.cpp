// The delimiter behaviours follow Hugging Face's definitions: the text is cut into alternating
// matched and unmatched runs (invert swaps which is which), runs are merged by the behaviour,
// and empty pieces are dropped.
#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace leap::tokenizer {
namespace {

// GPT-2's pre-tokenizer pattern, which ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Run {
  size_t begin, end;
  bool matched;
};

Expected<SplitBehavior> parse_behavior(const nlohmann::json& j, const std::string& field) {
  if (!j.is_string()) return invalid_input("field '" + field + "': expected a string");
  const std::string b = j;
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_input("field '" + field + "': unknown behavior '" + b +
                       "' (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

bool get_bool(const nlohmann::json& j, const char* key, bool def) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : def;
}

// Runs are the matched/unmatched alternation covering the piece (one empty run for "").
std::vector<Run> merge_runs(std::vector<Run> runs, SplitBehavior behavior) {
  std::vector<Run> out;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return runs;
    case SplitBehavior::kRemoved:
      for (const Run& r : runs)
        if (!r.matched) out.push_back(r);
      return out;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Run& r : runs) {
        if (r.matched && !previous_match && !out.empty())
          out.back().end = r.end;
        else
          out.push_back(r);
        previous_match = r.matched;
      }
      return out;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->matched && !previous_match && !out.empty())
          out.back().begin = it->begin;
        else
          out.push_back(*it);
        previous_match = it->matched;
      }
      return {out.rbegin(), out.rend()};
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Run& r : runs) {
        if (r.matched == previous_match && !out.empty())
          out.back().end = r.end;
        else
          out.push_back(r);
        previous_match = r.matched;
      }
      return out;
    }
  }
  return runs;
}

}  // namespace

Status PreTokenizer::parse_into(const nlohmann::json& j, const std::string& field,
                                std::vector<Step>& steps) {
  if (j.is_null()) return Status::ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return invalid_input("field '" + field + "': expected an object with a string 'type'");
  const std::string type = j["type"];
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      return invalid_input("field '" + field + ".pretokenizers': expected an array");
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i)
      LEAP_RETURN_IF_ERROR(parse_into(j["pretokenizers"][i],
                                      field + ".pretokenizers[" + std::to_string(i) + "]", steps));
    return Status::ok();
  }
  Step s;
  if (type == "ByteLevel") {
    s.kind = Step::Kind::kByteLevel;
    s.add_prefix_space = get_bool(j, "add_prefix_space", true);
    s.use_regex = get_bool(j, "use_regex", true);
  } else if (type == "Split") {
    if (!j.contains("pattern") || !j["pattern"].is_object())
      return invalid_input("field '" + field +
                           ".pattern': expected {\"Regex\": ...} or {\"String\": ...}");
    const auto& pat = j["pattern"];
    if (pat.contains("Regex") && pat["Regex"].is_string()) {
      auto re = RegexPattern::compile(pat["Regex"].get<std::string>());
      if (!re) return re.status().with_context("field '" + field + ".pattern.Regex'");
      s.regex = *re;
      s.is_regex = true;
    } else if (pat.contains("String") && pat["String"].is_string()) {
      s.literal = pat["String"].get<std::string>();
      if (s.literal.empty()) return invalid_input("field '" + field + ".pattern.String': empty");
    } else {
      return invalid_input("field '" + field +
                           ".pattern': expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (!j.contains("behavior")) return invalid_input("field '" + field + ".behavior': missing");
    LEAP_ASSIGN_OR_RETURN(s.behavior, parse_behavior(j["behavior"], field + ".behavior"));
    s.invert = get_bool(j, "invert", false);
  } else if (type == "Digits") {
    // HF's Digits splits at numeric characters (char::is_numeric: \p{N}): each one its own piece
    // (individual_digits, as DeepSeek-Coder and StarCoder2 ask), or each run of them one piece.
    // That is a Split on \p{N}, Isolated or Contiguous, as tokenizers implements it.
    auto re = RegexPattern::compile("\\p{N}");
    if (!re) return re.status().with_context("field '" + field + "' (Digits)");
    s.regex = *re;
    s.is_regex = true;
    s.behavior = get_bool(j, "individual_digits", false) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
  } else {
    return unsupported("field '" + field + ".type': unsupported pre-tokenizer '" + type +
                       "' (supported: Split, Digits, ByteLevel, Sequence, null)");
  }
  steps.push_back(std::move(s));
  return Status::ok();
}

Expected<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& j, const std::string& field) {
  PreTokenizer p;
  LEAP_RETURN_IF_ERROR(parse_into(j, field, p.steps_));
  for (const Step& s : p.steps_) {
    if (s.kind == Step::Kind::kByteLevel && s.use_regex) {
      LEAP_ASSIGN_OR_RETURN(p.gpt2_, RegexPattern::compile(kGpt2Pattern));
      break;
    }
  }
  return p;
}

bool PreTokenizer::byte_level() const {
  for (const Step& s : steps_)
    if (s.kind == Step::Kind::kByteLevel) return true;
  return false;
}

void PreTokenizer::apply_split(const Step& s, std::string_view piece,
                               std::vector<std::string>& out) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (s.is_regex) {
    s.regex.find_all(piece, matches);
  } else {
    for (size_t at = piece.find(s.literal); at != std::string_view::npos;
         at = piece.find(s.literal, at + s.literal.size()))
      matches.emplace_back(at, at + s.literal.size());
  }
  std::vector<Run> runs;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b != prev) runs.push_back({prev, b, s.invert});
    runs.push_back({b, e, !s.invert});
    prev = e;
  }
  if (prev != piece.size() || piece.empty()) runs.push_back({prev, piece.size(), s.invert});
  for (const Run& r : merge_runs(std::move(runs), s.behavior))
    if (r.end > r.begin) out.emplace_back(piece.substr(r.begin, r.end - r.begin));
}

void PreTokenizer::apply_byte_level(const Step& s, std::string_view piece,
                                    std::vector<std::string>& out) const {
  std::string prefixed;
  if (s.add_prefix_space && (piece.empty() || piece.front() != ' ')) {
    prefixed = " ";
    prefixed += piece;
    piece = prefixed;
  }
  auto emit = [&](std::string_view part) {
    std::string mapped;
    mapped.reserve(part.size() * 2);
    append_byte_level(part, mapped);
    out.push_back(std::move(mapped));
  };
  if (!s.use_regex) {
    if (!piece.empty()) emit(piece);
    return;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  gpt2_.find_all(piece, matches);
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b != prev) emit(piece.substr(prev, b - prev));
    emit(piece.substr(b, e - b));
    prev = e;
  }
  if (prev != piece.size()) emit(piece.substr(prev));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& pieces) const {
  if (steps_.empty()) {
    if (!text.empty()) pieces.emplace_back(text);
    return;
  }
  std::vector<std::string> cur{std::string(text)};
  std::vector<std::string> next;
  for (const Step& s : steps_) {
    next.clear();
    for (const std::string& piece : cur) {
      if (s.kind == Step::Kind::kSplit)
        apply_split(s, piece, next);
      else
        apply_byte_level(s, piece, next);
    }
    cur.swap(next);
  }
  for (std::string& p : cur)
    if (!p.empty()) pieces.push_back(std::move(p));
}

}  // namespace leap::tokenizer
