// `leap`: the one command of the project. Dispatches to subcommands (train, eval, check, score,
// analyze, tasks) and answers --help and --version itself.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/subcommands.h"
#include "leap/version.h"

namespace {

void print_usage() {
  std::printf(
      "leap %s: multi-turn GRPO with Difficulty-Conditioned Pruning for CUDA kernel generation\n\n"
      "usage: leap <subcommand> [--config FILE.ini] [--section.key=value ...]\n"
      "       leap <subcommand> --help      options of a subcommand, with defaults\n"
      "       leap --version                version, git commit and the device found\n\n"
      "subcommands:\n",
      LEAP_VERSION);
  for (const auto& s : leap::app::subcommands())
    if (!s.hidden) std::printf("  %-9s %s\n", s.name, s.summary);
  std::printf("\nTrain on the CPU demo: mpirun -np 4 leap train --config configs/demo.ini\n");
}

int print_version() {
  std::printf("leap %s (commit %s)\n", LEAP_VERSION, LEAP_GIT_COMMIT);
  return leap::app::print_devices("--version");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) return print_version();
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& s : leap::app::subcommands()) {
    if (std::strcmp(s.name, argv[1]) == 0) return s.run(args);
  }
  std::fprintf(stderr, "leap: error: unknown subcommand '%s' (see `leap --help`)\n", argv[1]);
  return 2;
}
