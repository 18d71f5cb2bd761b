// Answer extraction and the launch/scratch line grammar. Messages are feedback for the policy:
// they quote the offending text (bounded) and show the expected form.
#include "sandbox/answer.h"

#include <fmt/format.h>

#include <cctype>

#include "tasks/suite.h"

namespace leap::sandbox {

namespace {

constexpr std::string_view kLaunchForm = "// launch: NAME<<<GRID, BLOCK[, SMEM]>>>(ARGS)";
constexpr std::string_view kScratchForm = "// scratch: NAME DTYPE[COUNT]";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Quotes user text in a message without letting a huge line flood the feedback.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 120;
  if (s.size() <= kMax) return fmt::format("'{}'", s);
  return fmt::format("'{}...'", s.substr(0, kMax));
}

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

// A kernel name: an identifier (optionally qualified with ::), optionally followed by one
// balanced template argument list that NVRTC resolves as a name expression.
bool is_kernel_name(std::string_view s) {
  size_t lt = s.find('<');
  std::string_view base = s.substr(0, lt);
  size_t pos = 0;
  while (true) {
    size_t sep = base.find("::", pos);
    if (!is_identifier(base.substr(pos, sep == std::string_view::npos ? sep : sep - pos)))
      return false;
    if (sep == std::string_view::npos) break;
    pos = sep + 2;
  }
  if (lt == std::string_view::npos) return true;
  if (s.back() != '>') return false;
  int depth = 0;
  for (size_t i = lt; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>' && --depth == 0 && i + 1 != s.size()) return false;
  }
  return depth == 0;
}

// Splits on commas outside parentheses; empty pieces are kept so the caller can reject them.
Expected<std::vector<std::string>> split_top_level(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return invalid_input("unbalanced ')' in " + quote(s));
    if (c == ',' && depth == 0) {
      out.emplace_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return invalid_input("unbalanced '(' in " + quote(s));
  return out;
}

// A launch dimension: one expression, or a parenthesised (x, y[, z]) tuple.
Expected<std::vector<std::string>> parse_dim(std::string_view s, const char* what) {
  s = trim(s);
  if (s.empty()) return invalid_input(fmt::format("empty {} in the launch configuration", what));
  if (s.front() == '(' && s.back() == ')') {
    // Only a tuple if the outer parentheses match each other and hold a top-level comma.
    int depth = 0;
    bool outer = true;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      if (s[i] == ')') --depth;
      if (depth == 0) outer = false;
    }
    if (outer) {
      LEAP_ASSIGN_OR_RETURN(auto parts, split_top_level(s.substr(1, s.size() - 2)));
      if (parts.size() > 1) {
        if (parts.size() > 3)
          return invalid_input(fmt::format("{} {} has {} components; at most 3 (x, y, z)", what,
                                           quote(s), parts.size()));
        for (const auto& p : parts)
          if (p.empty())
            return invalid_input(fmt::format("empty component in {} {}", what, quote(s)));
        return parts;
      }
    }
  }
  return std::vector<std::string>{std::string(s)};
}

// Matches "// launch:" / "// scratch:" (spaces allowed around the words) and returns the rest.
bool match_directive(std::string_view line, std::string_view word, std::string_view* rest) {
  line = trim(line);
  if (line.substr(0, 2) != "//") return false;
  line = trim(line.substr(2));
  if (line.substr(0, word.size()) != word) return false;
  line = trim(line.substr(word.size()));
  if (line.empty() || line.front() != ':') return false;
  *rest = trim(line.substr(1));
  return true;
}

// A comment that looks like a directive but misses the colon: almost certainly a typo the
// policy should hear about rather than a silently ignored launch.
bool looks_like_directive(std::string_view line, std::string_view word) {
  line = trim(line);
  if (line.substr(0, 2) != "//") return false;
  line = trim(line.substr(2));
  return line.substr(0, word.size()) == word &&
         (line.size() == word.size() || !is_ident_char(line[word.size()]));
}

}  // namespace

Expected<std::string> extract_code_block(std::string_view completion) {
  // Fences are lines starting with ```; an opening ```cuda fence is followed by a closing ```.
  size_t pos = 0;
  bool in_block = false;
  size_t body_start = 0;
  std::string_view last;
  bool found = false;
  while (pos <= completion.size()) {
    size_t eol = completion.find('\n', pos);
    if (eol == std::string_view::npos) eol = completion.size();
    std::string_view line = completion.substr(pos, eol - pos);
    std::string_view t = trim(line);
    if (t.substr(0, 3) == "```") {
      if (in_block) {
        last = completion.substr(body_start, pos - body_start);
        found = true;
        in_block = false;
      } else if (trim(t.substr(3)) == "cuda") {
        in_block = true;
        body_start = eol + 1 <= completion.size() ? eol + 1 : completion.size();
      }
    }
    pos = eol + 1;
  }
  if (in_block)
    return invalid_input("the last ```cuda block is not closed: end it with a line holding ```");
  if (!found)
    return invalid_input(
        "no ```cuda code block found: put the kernel and its launch lines in a fenced block "
        "that starts with ```cuda and ends with ```");
  return std::string(last);
}

Expected<LaunchSpec> parse_launch_line(std::string_view text) {
  text = trim(text);
  auto bad = [&](const std::string& why) {
    return invalid_input(
        fmt::format("bad launch line {}: {}; expected {}", quote(text), why, kLaunchForm));
  };
  size_t open = text.find("<<<");
  if (open == std::string_view::npos) return bad("no '<<<'");
  size_t close = text.find(">>>", open + 3);
  if (close == std::string_view::npos) return bad("no '>>>'");
  LaunchSpec spec;
  spec.kernel = std::string(trim(text.substr(0, open)));
  if (!is_kernel_name(spec.kernel))
    return bad("the kernel name " + quote(spec.kernel) + " is not a name");
  auto config = split_top_level(text.substr(open + 3, close - open - 3));
  if (!config) return bad(config.status().message());
  if (config->size() < 2 || config->size() > 3)
    return bad(
        fmt::format("the configuration has {} parts; it takes GRID, BLOCK and optionally SMEM",
                    config->size()));
  auto grid = parse_dim((*config)[0], "grid");
  if (!grid) return bad(grid.status().message());
  auto block = parse_dim((*config)[1], "block");
  if (!block) return bad(block.status().message());
  spec.grid = std::move(*grid);
  spec.block = std::move(*block);
  if (config->size() == 3) {
    if ((*config)[2].empty()) return bad("empty shared-memory size");
    spec.shared_bytes = (*config)[2];
  }
  std::string_view rest = trim(text.substr(close + 3));
  if (rest.empty() || rest.front() != '(' || rest.back() != ')')
    return bad("the arguments must follow '>>>' in parentheses");
  // The parentheses must be the argument list itself, not "(a)(b)".
  int depth = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '(') ++depth;
    if (rest[i] == ')' && --depth == 0 && i + 1 != rest.size())
      return bad("text after the arguments");
  }
  std::string_view inner = trim(rest.substr(1, rest.size() - 2));
  if (!inner.empty()) {
    auto args = split_top_level(inner);
    if (!args) return bad(args.status().message());
    for (const auto& a : *args)
      if (a.empty()) return bad("an argument is empty");
    spec.args = std::move(*args);
  }
  return spec;
}

Expected<ScratchSpec> parse_scratch_line(std::string_view text) {
  text = trim(text);
  auto bad = [&](const std::string& why) {
    return invalid_input(
        fmt::format("bad scratch line {}: {}; expected {} with DTYPE one of "
                    "f32, f16, bf16, i32, i64, u8",
                    quote(text), why, kScratchForm));
  };
  size_t sp = text.find_first_of(" \t");
  if (sp == std::string_view::npos) return bad("no dtype");
  ScratchSpec spec;
  spec.name = std::string(text.substr(0, sp));
  if (!is_identifier(spec.name))
    return bad("the name " + quote(spec.name) + " is not an identifier");
  std::string_view rest = trim(text.substr(sp));
  size_t lb = rest.find('[');
  if (lb == std::string_view::npos || rest.back() != ']') return bad("no [COUNT]");
  std::string_view dtype = trim(rest.substr(0, lb));
  auto parsed = tasks::parse_dtype(dtype);
  if (!parsed) return bad("unknown dtype " + quote(dtype));
  spec.dtype = *parsed;
  spec.count = std::string(trim(rest.substr(lb + 1, rest.size() - lb - 2)));
  if (spec.count.empty()) return bad("empty count");
  return spec;
}

Expected<Answer> parse_answer(std::string_view completion) {
  LEAP_ASSIGN_OR_RETURN(std::string code, extract_code_block(completion));
  return parse_answer_code(code);
}

Expected<Answer> parse_answer_code(std::string_view code) {
  LEAP_RETURN_IF_ERROR(check_device_only(code));
  Answer answer;
  int line_no = 0;
  size_t pos = 0;
  while (pos < code.size()) {
    size_t eol = code.find('\n', pos);
    if (eol == std::string_view::npos) eol = code.size();
    std::string_view line = code.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    std::string_view rest;
    if (match_directive(line, "launch", &rest)) {
      auto spec = parse_launch_line(rest);
      if (!spec) return spec.status().with_context(fmt::format("line {}", line_no));
      spec->line = line_no;
      answer.launches.push_back(std::move(*spec));
    } else if (match_directive(line, "scratch", &rest)) {
      auto spec = parse_scratch_line(rest);
      if (!spec) return spec.status().with_context(fmt::format("line {}", line_no));
      spec->line = line_no;
      answer.scratch.push_back(std::move(*spec));
    } else if (looks_like_directive(line, "launch") || looks_like_directive(line, "scratch")) {
      return invalid_input(
          fmt::format("line {}: {} looks like a launch or scratch line but has no "
                      "':'; expected {} or {}",
                      line_no, quote(trim(line)), kLaunchForm, kScratchForm));
    }
  }
  if (answer.launches.empty())
    return invalid_input(fmt::format(
        "the code block has no launch line: add one per kernel launch, in order, e.g. {}",
        kLaunchForm));
  answer.source = std::string(code);
  return answer;
}

}  // namespace leap::sandbox
