// Rank-aware logging with levels and elapsed time. A Logger is a value held by the run's context
// (no global logger): rank 0 speaks by default, every rank with `--log.all_ranks=true`.
// Lines look like "[leap 12.3s r0 info] message", written whole so ranks do not interleave.
#pragma once

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace leap {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kQuiet = 4 };

// Parses "debug|info|warn|error|quiet"; false for anything else.
bool parse_log_level(std::string_view text, LogLevel* out);

class Logger {
 public:
  Logger() : start_(std::chrono::steady_clock::now()) {}
  Logger(int rank, bool all_ranks, LogLevel level)
      : rank_(rank), all_ranks_(all_ranks), level_(level), start_(std::chrono::steady_clock::now()) {}

  bool enabled(LogLevel level) const {
    return level >= level_ && level_ != LogLevel::kQuiet && (all_ranks_ || rank_ == 0 || level >= LogLevel::kError);
  }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void write(LogLevel level, std::string_view message) const;

  template <class... A>
  void debug(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::kDebug, f, std::forward<A>(a)...); }
  template <class... A>
  void info(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::kInfo, f, std::forward<A>(a)...); }
  template <class... A>
  void warn(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::kWarn, f, std::forward<A>(a)...); }
  template <class... A>
  void error(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::kError, f, std::forward<A>(a)...); }

  int rank() const { return rank_; }

 private:
  template <class... A>
  void emit(LogLevel level, fmt::format_string<A...> f, A&&... a) const {
    if (enabled(level)) write(level, fmt::format(f, std::forward<A>(a)...));
  }

  int rank_ = 0;
  bool all_ranks_ = false;
  LogLevel level_ = LogLevel::kInfo;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace leap
