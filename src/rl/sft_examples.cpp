// Text rewrites of reference answers for SFT: meaning-keeping ones and deliberately broken ones.
#include "rl/sft_examples.h"

#include <algorithm>
#include <optional>
#include <regex>
#include <set>

namespace leap::rl {

namespace {

bool is_launch_or_scratch(const std::string& line) {
  return line.find("// launch:") != std::string::npos || line.find("// scratch:") != std::string::npos;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return out;
}

// Replaces whole-word `from` by `to` on the lines selected by `which`.
template <class Pred>
std::string replace_word(const std::string& text, const std::string& from, const std::string& to, Pred which) {
  std::regex word("\\b" + from + "\\b");
  auto lines = split_lines(text);
  for (auto& l : lines)
    if (which(l)) l = std::regex_replace(l, word, to);
  return join_lines(lines);
}

std::vector<std::string> kernel_names(const std::string& code) {
  std::vector<std::string> names;
  std::regex def(R"(__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+([A-Za-z_]\w*))");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), def); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

std::set<std::string> task_names(const tasks::Task& task) {
  std::set<std::string> names;
  for (const auto& b : task.buffers) names.insert(b.name);
  for (const auto& [k, v] : task.params) names.insert(k);
  return names;
}

// The BLOCK of a launch line when it is a plain integer literal ("256"), else "".
std::string block_literal(const std::string& line) {
  auto open = line.find("<<<"), close = line.find(">>>");
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::string inside = line.substr(open + 3, close - open - 3);
  int depth = 0;
  std::vector<std::string> parts(1);
  for (char ch : inside) {
    depth += (ch == '(') - (ch == ')');
    if (ch == ',' && depth == 0) parts.emplace_back();
    else parts.back() += ch;
  }
  if (parts.size() < 2) return "";
  static const std::regex literal(R"(^\s*(\d+)\s*$)");
  std::smatch m;
  return std::regex_match(parts[1], m, literal) ? std::string(m[1]) : std::string();
}

// Two adjacent declarations `T a = ...;` / `T b = ...;` that do not read each other's name can
// trade places without changing what the kernel computes. Returns the first such pair's index.
std::optional<size_t> independent_declarations(const std::vector<std::string>& lines) {
  static const std::regex decl(
      R"(^\s*(?:const\s+)?(?:int|unsigned|float|double|long|size_t|auto)\s+([A-Za-z_]\w*)\s*=\s*(.+);\s*$)");
  std::smatch a, b;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!std::regex_match(lines[i], a, decl) || !std::regex_match(lines[i + 1], b, decl)) continue;
    const std::string rhs_a = a[2], rhs_b = b[2];
    if (a[1] == b[1] || std::regex_search(rhs_b, std::regex("\\b" + std::string(a[1]) + "\\b")) ||
        std::regex_search(rhs_a, std::regex("\\b" + std::string(b[1]) + "\\b")))
      continue;
    return i;
  }
  return std::nullopt;
}

}  // namespace

std::vector<AnswerVariant> augment_answer(const tasks::Task& task, const std::string& reference, Rng& rng,
                                          int max_variants, bool rename_kernels) {
  std::vector<AnswerVariant> candidates;
  const auto reserved = task_names(task);
  // 1. The kernels under other names (in their definitions, calls and launch lines alike).
  static const char* kSuffixes[] = {"_kernel", "_v2", "_impl", "_k"};
  if (rename_kernels) {
    std::string renamed = reference;
    for (const auto& k : kernel_names(reference))
      renamed = replace_word(renamed, k, k + kSuffixes[rng.below(4)], [](const std::string&) { return true; });
    if (renamed != reference) candidates.push_back({renamed, "rename_kernel"});
  }
  // 2. Another block size: a literal used in a launch line's block position, changed everywhere
  // on the launch lines (grid expressions use it too). Kernels that hard-code it fail and are
  // dropped by verification.
  for (const auto& line : split_lines(reference)) {
    if (line.find("// launch:") == std::string::npos) continue;
    std::string old = block_literal(line);
    if (old.empty()) continue;
    for (const char* size : {"64", "128", "512"}) {
      if (old == size) continue;
      candidates.push_back({replace_word(reference, old, size, [](const std::string& l) {
                              return l.find("// launch:") != std::string::npos;
                            }),
                            std::string("block_size_") + size});
    }
    break;
  }
  // 3. Local variables renamed (never a buffer or parameter name: launch lines refer to those).
  static const std::pair<const char*, const char*> kLocals[] = {
      {"i", "idx"}, {"tid", "t"}, {"row", "r"}, {"col", "c"}, {"sum", "acc"}, {"idx", "i"}, {"acc", "total"}};
  std::string locals = reference;
  std::set<std::string> produced;  // names an earlier rename introduced: never renamed back
  for (const auto& [from, to] : kLocals) {
    if (reserved.count(from) || reserved.count(to) || produced.count(from)) continue;
    if (std::regex_search(locals, std::regex(std::string("\\b") + to + "\\b"))) continue;  // would collide
    std::string next = replace_word(locals, from, to, [](const std::string& l) { return !is_launch_or_scratch(l); });
    if (next != locals) produced.insert(to);
    locals = std::move(next);
  }
  if (locals != reference) candidates.push_back({locals, "rename_locals"});
  // 4. Independent statements in the other order.
  auto lines = split_lines(reference);
  if (auto i = independent_declarations(lines)) {
    std::swap(lines[*i], lines[*i + 1]);
    candidates.push_back({join_lines(lines), "reorder_statements"});
  }

  // A random subset, without repeats.
  for (size_t i = candidates.size(); i > 1; --i) std::swap(candidates[i - 1], candidates[rng.below(i)]);
  std::vector<AnswerVariant> out;
  std::set<std::string> seen{reference};
  for (auto& c : candidates) {
    if (static_cast<int>(out.size()) >= max_variants) break;
    if (seen.insert(c.answer).second) out.push_back(std::move(c));
  }
  return out;
}

std::vector<AnswerVariant> break_answer(const tasks::Task& task, const std::string& reference) {
  (void)task;
  std::vector<AnswerVariant> out;
  // No code fence at all: the sandbox finds no answer.
  std::string bare = std::regex_replace(reference, std::regex("```(cuda)?\\n?"), "");
  if (bare != reference) out.push_back({bare, "no_fence"});
  // The last semicolon of the device code removed: a compile error.
  auto lines = split_lines(reference);
  for (size_t i = lines.size(); i-- > 0;) {
    if (is_launch_or_scratch(lines[i])) continue;
    auto pos = lines[i].rfind(';');
    if (pos == std::string::npos) continue;
    auto broken = lines;
    broken[i].erase(pos, 1);
    out.push_back({join_lines(broken), "missing_semicolon"});
    break;
  }
  // A misspelled kernel in the first launch line.
  auto names = kernel_names(reference);
  if (!names.empty()) {
    std::string misspelled = replace_word(reference, names[0], names[0] + "_", [](const std::string& l) {
      return l.find("// launch:") != std::string::npos;
    });
    if (misspelled != reference) out.push_back({misspelled, "wrong_launch_name"});
  }
  // cdiv(a, b) rounded down: the tail of a ragged size is never computed.
  std::string floor_div = std::regex_replace(reference, std::regex(R"(cdiv\(([^,()]+),\s*([^()]+?)\))"), "($1) / ($2)");
  if (floor_div != reference) out.push_back({floor_div, "grid_rounded_down"});
  // The first bounds guard `if (x < y)` dropped: out-of-bounds accesses on ragged sizes.
  std::regex guard(R"(if\s*\(\s*[A-Za-z_]\w*\s*<\s*[A-Za-z_]\w*\s*\)\s*)");
  std::string unguarded = std::regex_replace(reference, guard, "", std::regex_constants::format_first_only);
  if (unguarded != reference) out.push_back({unguarded, "drop_guard"});
  return out;
}

}  // namespace leap::rl
