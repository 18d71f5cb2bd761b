// OptionSet: one declaration per option drives the parser, the help and the INI dump.
#include "common/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <boost/program_options.hpp>
#include <fstream>
#include <set>
#include <sstream>

namespace po = boost::program_options;

namespace leap {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

struct Entry {
  std::string key;
  std::string type_name;
  std::string default_text;
  std::string help;
  OptionLimits limits;
  std::function<std::string()> value_text;
  std::function<std::optional<double>()> numeric_value;  // for range checks
};

std::string format_value(int v) { return std::to_string(v); }
std::string format_value(int64_t v) { return std::to_string(v); }
std::string format_value(double v) { return fmt::format("{}", v); }
std::string format_value(bool v) { return v ? "true" : "false"; }
std::string format_value(const std::string& v) { return v; }

std::string section_of(const std::string& key) {
  auto dot = key.find('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string describe_limits(const OptionLimits& lim) {
  std::string out;
  if (lim.min && lim.max) out = fmt::format("in [{}, {}]", *lim.min, *lim.max);
  else if (lim.min) out = fmt::format(">= {}", *lim.min);
  else if (lim.max) out = fmt::format("<= {}", *lim.max);
  if (!lim.choices.empty()) {
    std::string joined;
    for (const auto& c : lim.choices) joined += (joined.empty() ? "" : "|") + c;
    out = "one of " + joined;
  }
  return out;
}

}  // namespace

struct OptionSet::Impl {
  po::options_description desc{"options"};
  std::vector<Entry> entries;
  std::map<std::string, std::string> alias_to_key;
  std::string positional_key;
  std::set<std::string> set_keys;
  std::map<std::string, std::string> origin;  // key -> "FILE:LINE" or "command line"

  const Entry* find(const std::string& key) const {
    for (const auto& e : entries)
      if (e.key == key) return &e;
    return nullptr;
  }

  template <class T>
  void add(const std::string& key, T* target, const T& def, const std::string& help,
           OptionLimits lim, const char* type_name) {
    if (find(key) != nullptr) throw std::logic_error("option declared twice: " + key);
    *target = def;
    auto* sem = po::value<T>(target)->default_value(def, format_value(def));
    if constexpr (std::is_same_v<T, bool>) sem->implicit_value(true, "true");
    desc.add_options()(key.c_str(), sem, help.c_str());
    Entry e;
    e.key = key;
    e.type_name = type_name;
    e.default_text = format_value(def);
    e.help = help;
    e.limits = lim;
    e.value_text = [target] { return format_value(*target); };
    e.numeric_value = [target]() -> std::optional<double> {
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return static_cast<double>(*target);
      return std::nullopt;
    };
    if (!lim.alias.empty()) alias_to_key[lim.alias] = key;
    entries.push_back(std::move(e));
  }

  std::vector<std::string> all_names() const {
    std::vector<std::string> names;
    for (const auto& e : entries) names.push_back(e.key);
    for (const auto& [alias, key] : alias_to_key) names.push_back(alias);
    return names;
  }

  Status check_limits() const {
    for (const auto& e : entries) {
      auto where = origin.count(e.key) ? " (" + origin.at(e.key) + ")" : std::string();
      if (auto v = e.numeric_value()) {
        // nan passes every comparison below, and inf is no setting of anything here.
        if (!std::isfinite(*v))
          return invalid_input(fmt::format("option '{}' = {}{} is not a finite number: it must be {}", e.key,
                                           e.value_text(), where, describe_limits(e.limits)));
        if ((e.limits.min && *v < *e.limits.min) || (e.limits.max && *v > *e.limits.max)) {
          return invalid_input(fmt::format("option '{}' = {}{} is out of range: it must be {}", e.key,
                                           e.value_text(), where, describe_limits(e.limits)));
        }
      }
      if (!e.limits.choices.empty()) {
        auto value = e.value_text();
        if (std::find(e.limits.choices.begin(), e.limits.choices.end(), value) == e.limits.choices.end()) {
          return invalid_input(fmt::format("option '{}' = '{}'{} is not allowed: it must be {}", e.key,
                                           value, where, describe_limits(e.limits)));
        }
      }
    }
    return Status::ok();
  }
};

OptionSet::OptionSet() : impl_(std::make_unique<Impl>()) {}
OptionSet::~OptionSet() = default;

void OptionSet::add(const std::string& key, int* t, int d, const std::string& h, OptionLimits l) {
  impl_->add(key, t, d, h, std::move(l), "INT");
}
void OptionSet::add(const std::string& key, int64_t* t, int64_t d, const std::string& h, OptionLimits l) {
  impl_->add(key, t, d, h, std::move(l), "INT");
}
void OptionSet::add(const std::string& key, double* t, double d, const std::string& h, OptionLimits l) {
  impl_->add(key, t, d, h, std::move(l), "FLOAT");
}
void OptionSet::add(const std::string& key, bool* t, bool d, const std::string& h, OptionLimits l) {
  impl_->add(key, t, d, h, std::move(l), "BOOL");
}
void OptionSet::add(const std::string& key, std::string* t, const std::string& d, const std::string& h,
                    OptionLimits l) {
  impl_->add(key, t, d, h, std::move(l), "STRING");
}

void OptionSet::set_positional(const std::string& key) { impl_->positional_key = key; }

bool OptionSet::was_set(const std::string& key) const { return impl_->set_keys.count(key) > 0; }

std::string OptionSet::nearest_key(const std::string& unknown) const {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& name : impl_->all_names()) {
    // Compare against the full key and against its part after the section, so that a key
    // placed in the wrong section still finds its home.
    size_t d = edit_distance(unknown, name);
    auto dot = name.find('.');
    if (dot != std::string::npos) d = std::min(d, edit_distance(unknown, name.substr(dot + 1)) + 1);
    if (d < best_d) best_d = d, best = name;
  }
  return best;
}

Status OptionSet::parse(const std::vector<std::string>& raw_args) {
  Impl& im = *impl_;
  // 1. Pull out --config and map short aliases to their keys.
  std::string config_path;
  std::vector<std::string> args;
  for (size_t i = 0; i < raw_args.size(); ++i) {
    std::string a = raw_args[i];
    if (a == "--config") {
      if (i + 1 >= raw_args.size()) return invalid_input("--config needs a file: --config FILE.ini");
      config_path = raw_args[++i];
      continue;
    }
    if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(9);
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      auto it = im.alias_to_key.find(name);
      if (it != im.alias_to_key.end()) a = "--" + it->second + (eq == std::string::npos ? "" : a.substr(eq));
      // A flag that has a bare value, given alone (nothing follows it, or another flag does).
      if (eq == std::string::npos) {
        const Entry* e = im.find(a.substr(2));
        const bool alone = i + 1 >= raw_args.size() || raw_args[i + 1].rfind("--", 0) == 0;
        if (e && !e->limits.bare.empty() && alone) a += "=" + e->limits.bare;
      }
    }
    args.push_back(a);
  }

  po::variables_map vm;
  // 2. Command line (stored first: po::store never overwrites, so the command line wins).
  try {
    po::positional_options_description pos;
    if (!im.positional_key.empty()) pos.add(im.positional_key.c_str(), 1);
    auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    auto parsed = po::command_line_parser(args).options(im.desc).positional(pos).style(style).run();
    po::store(parsed, vm);
    for (const auto& opt : parsed.options) {
      im.set_keys.insert(opt.string_key);
      im.origin[opt.string_key] = "command line";
    }
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    while (!name.empty() && name[0] == '-') name.erase(0, 1);
    return invalid_input(fmt::format("unknown option '--{}' on the command line; did you mean '--{}'? "
                                     "(`leap --help` lists every option)",
                                     name, nearest_key(name)));
  } catch (const po::too_many_positional_options_error&) {
    return invalid_input("too many arguments without a flag on the command line");
  } catch (const po::error& e) {
    return invalid_input(fmt::format("command line: {}", e.what()));
  }

  // 3. The config file, scanned first for unknown keys with their line numbers.
  if (!config_path.empty()) {
    std::ifstream in(config_path);
    if (!in) return not_found(fmt::format("cannot open config file '{}': check the path", config_path));
    std::stringstream text;
    text << in.rdbuf();
    std::map<std::string, int> key_line;
    std::istringstream lines(text.str());
    std::string line, section;
    for (int n = 1; std::getline(lines, line); ++n) {
      std::string t = trim(line);
      if (t.empty() || t[0] == '#' || t[0] == ';') continue;
      // An indented line that is not a known key continues a multi-line value (what to_ini writes
      // for a text given on the command line), which this reader cannot take.
      auto continues = [&] {
        if (key_line.empty() || (line[0] != ' ' && line[0] != '\t')) return false;
        const auto at = t.find('=');
        const std::string k = at == std::string::npos ? "" : trim(t.substr(0, at));
        return at == std::string::npos || im.find(section.empty() ? k : section + "." + k) == nullptr;
      };
      if (continues())
        return invalid_input(fmt::format("{}:{}: an indented line continues a multi-line value, which leap does not "
                                         "read from a config file (a --print-config of a text given on the command "
                                         "line): give that option on the command line instead",
                                         config_path, n));
      if (t.front() == '[') {
        if (t.back() != ']') return invalid_input(fmt::format("{}:{}: malformed section header '{}'", config_path, n, t));
        section = trim(t.substr(1, t.size() - 2));
        continue;
      }
      auto eq = t.find('=');
      if (eq == std::string::npos)
        return invalid_input(fmt::format("{}:{}: expected 'key = value', got '{}'", config_path, n, t));
      std::string key = trim(t.substr(0, eq));
      std::string full = section.empty() ? key : section + "." + key;
      if (im.find(full) == nullptr) {
        return invalid_input(fmt::format("{}:{}: unknown key '{}'{}; did you mean '{}'?", config_path, n, key,
                                         section.empty() ? "" : " in section [" + section + "]",
                                         nearest_key(full)));
      }
      if (key_line.count(full))
        return invalid_input(fmt::format("{}:{}: key '{}' repeats line {}", config_path, n, full, key_line[full]));
      key_line[full] = n;
    }
    try {
      std::istringstream again(text.str());
      po::store(po::parse_config_file(again, im.desc), vm);
    } catch (const po::error_with_option_name& e) {
      std::string name = e.get_option_name();
      while (!name.empty() && name[0] == '-') name.erase(0, 1);
      auto it = key_line.find(name);
      std::string where = it != key_line.end() ? fmt::format("{}:{}", config_path, it->second) : config_path;
      return invalid_input(fmt::format("{}: {}", where, e.what()));
    } catch (const po::error& e) {
      return invalid_input(fmt::format("{}: {}", config_path, e.what()));
    }
    for (const auto& [key, n] : key_line) {
      if (!im.origin.count(key)) im.origin[key] = fmt::format("{}:{}", config_path, n);
      im.set_keys.insert(key);
    }
  }

  try {
    po::notify(vm);
  } catch (const po::error& e) {
    return invalid_input(e.what());
  }
  return im.check_limits();
}

std::string OptionSet::help_text() const {
  std::string out, section = "\x01";
  for (const auto& e : impl_->entries) {
    if (section_of(e.key) != section) {
      section = section_of(e.key);
      out += fmt::format("\n[{}]\n", section);
    }
    std::string lim = describe_limits(e.limits);
    std::string alias = e.limits.alias.empty() ? "" : fmt::format(" (alias --{})", e.limits.alias);
    out += fmt::format("  --{}={}{}  default: {}{}\n      {}\n", e.key, e.type_name, alias,
                       e.default_text.empty() ? "\"\"" : e.default_text, lim.empty() ? "" : ", " + lim, e.help);
  }
  return out;
}

std::string OptionSet::to_ini() const {
  std::string out, section = "\x01";
  for (const auto& e : impl_->entries) {
    if (section_of(e.key) != section) {
      section = section_of(e.key);
      out += fmt::format("{}[{}]\n", out.empty() ? "" : "\n", section);
    }
    // A value with line breaks (a prompt text given on the command line) continues on indented
    // lines, as INI readers such as Python's configparser read it; unindented, its lines would
    // be read as keys or section headers.
    std::string value = e.value_text();
    for (size_t at = value.find('\n'); at != std::string::npos; at = value.find('\n', at + 3)) value.insert(at + 1, "  ");
    out += fmt::format("{} = {}\n", e.key.substr(e.key.find('.') + 1), value);
  }
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(',', start);
    out.push_back(trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace leap
