// Options declared once, parsed from INI files and the command line.
//
// Every option is declared exactly once, by the module that owns it, with its key
// ("section.key"), target field, default, help and limits. The help text, the parser, the
// `--print-config` INI and the config stored in HDF5/checkpoints all come from that one
// declaration, so they cannot drift apart. Parsing uses Boost.Program_options; because Boost
// does not report line numbers, config files are scanned first so that an unknown key is
// reported as FILE:LINE with the nearest valid key. Precedence: command line > --config file >
// default. Nothing is written by anyone before parse() has returned OK.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace leap {

struct OptionLimits {
  std::optional<double> min;            // inclusive
  std::optional<double> max;            // inclusive
  std::vector<std::string> choices;     // for strings: the allowed values
  std::string alias;                    // short flag of a subcommand, e.g. "suite" for --suite
  std::string bare;                     // value of the flag given alone (`--resume` = "latest"); "" = none
};

class OptionSet {
 public:
  OptionSet();
  ~OptionSet();
  OptionSet(const OptionSet&) = delete;
  OptionSet& operator=(const OptionSet&) = delete;

  // Declares "section.key". The target keeps the default until parse() overwrites it.
  void add(const std::string& key, int* target, int def, const std::string& help, OptionLimits lim = {});
  void add(const std::string& key, int64_t* target, int64_t def, const std::string& help, OptionLimits lim = {});
  void add(const std::string& key, double* target, double def, const std::string& help, OptionLimits lim = {});
  void add(const std::string& key, bool* target, bool def, const std::string& help, OptionLimits lim = {});
  void add(const std::string& key, std::string* target, const std::string& def, const std::string& help,
           OptionLimits lim = {});

  // A bare argument (`leap analyze RUN.h5`) fills this key; at most one positional key.
  void set_positional(const std::string& key);

  // Parses args (without the program and subcommand names). Recognises --config FILE.
  // Returns invalid_input naming the file:line or flag, the bad value and the fix.
  Status parse(const std::vector<std::string>& args);

  // True when the key was given in the config file or on the command line.
  bool was_set(const std::string& key) const;

  // "--section.key=TYPE (default X, range)  help" for every option, grouped by section.
  std::string help_text() const;
  // The fully resolved config as INI text, sections in declaration order.
  std::string to_ini() const;
  // Nearest declared key to `unknown` (edit distance), for "did you mean" messages.
  std::string nearest_key(const std::string& unknown) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "1, 8" -> {"1", "8"}: the items of a comma-separated option value, trimmed; empty items are
// kept so that callers can report them.
std::vector<std::string> split_list(const std::string& text);

// Edit distance used for suggestions; exposed for tests.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace leap
