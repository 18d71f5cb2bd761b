// See cpu_time.h.
#include "common/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace leap {

namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

// utime + stime + cutime + cstime of a live process (fields 14-17 of /proc/PID/stat); 0 when it
// is gone or unreadable.
double live_process_seconds(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  for (int f = 3; f < 14; ++f) fields >> skip;  // state .. majflt/cmajflt (fields 3-13)
  long long ut = 0, st = 0, cut = 0, cst = 0;
  fields >> ut >> st >> cut >> cst;
  return static_cast<double>(ut + st + cut + cst) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double process_tree_cpu_seconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  double total = seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
                 seconds(children.ru_stime);
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    std::string pid;
    while (in >> pid) total += live_process_seconds(pid);
  }
  return total;
}

}  // namespace leap
