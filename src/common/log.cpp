// Logger output: one fprintf per line so that lines from different ranks do not interleave.
#include "common/log.h"

namespace leap {

bool parse_log_level(std::string_view text, LogLevel* out) {
  static constexpr std::pair<std::string_view, LogLevel> kNames[] = {
      {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo}, {"warn", LogLevel::kWarn},
      {"error", LogLevel::kError}, {"quiet", LogLevel::kQuiet}};
  for (const auto& [name, level] : kNames) {
    if (text == name) {
      *out = level;
      return true;
    }
  }
  return false;
}

void Logger::write(LogLevel level, std::string_view message) const {
  static constexpr const char* kTags[] = {"debug", "info", "warn", "error", "quiet"};
  std::string line = fmt::format("[leap {:.1f}s r{} {}] {}\n", elapsed_s(), rank_,
                                 kTags[static_cast<int>(level)], message);
  std::FILE* stream = level >= LogLevel::kWarn ? stderr : stdout;
  std::fputs(line.c_str(), stream);
  std::fflush(stream);
}

}  // namespace leap
