#!/usr/bin/env bash
# scripts/stage_gpu_deps.sh, as a user runs it before carrying build-gpu-deps/ to a GPU machine:
# the staged folder must be complete on its own. A program using fmt, nlohmann_json and
# Boost.program_options is built with the staged folder first on the include path; every header
# of those libraries it reads must come from the staged folder (a header missing there would
# silently come from /usr/include here, and be missing on the GPU machine), Boost must be linked
# statically, and the program must run. Staging again replaces the folder whole.
set -euo pipefail
ROOT="${LEAP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

deps="$tmp/deps"
"$ROOT/scripts/stage_gpu_deps.sh" "$deps" > "$tmp/stage.log" || fail "staging: $(cat "$tmp/stage.log")"
grep -q "staged into $deps" "$tmp/stage.log" || fail "no summary line: $(cat "$tmp/stage.log")"
[[ -f "$deps/lib/libboost_program_options.a" ]] || fail "no static Boost library staged"

cat > "$tmp/probe.cpp" <<'CPP'
#include <fmt/format.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <iostream>
namespace po = boost::program_options;
int main(int argc, char** argv) {
  int n = 0;
  po::options_description desc;
  desc.add_options()("n", po::value<int>(&n)->default_value(1), "count");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  const auto j = nlohmann::json::parse(R"({"hidden_size": 64})");
  std::cout << fmt::format("n={} hidden={}", n, j.at("hidden_size").get<int>()) << "\n";
}
CPP
g++ -std=c++20 -DFMT_HEADER_ONLY -I"$deps/include" -MD -MF "$tmp/probe.d" "$tmp/probe.cpp" \
    "$deps/lib/libboost_program_options.a" -o "$tmp/probe" 2> "$tmp/build.log" ||
  fail "the probe does not build against the staged folder: $(head -n 20 "$tmp/build.log")"

# Every fmt, nlohmann or Boost header the compiler read lies under the staged folder.
leaked=$(tr ' \\' '\n\n' < "$tmp/probe.d" | grep -E '/(fmt|nlohmann|boost)/' | grep -v "^$deps/" || true)
[[ -z "$leaked" ]] || fail "headers read from outside the staged folder: $(echo "$leaked" | head -n 5)"
used=$(tr ' \\' '\n\n' < "$tmp/probe.d" | grep -c "^$deps/include/boost/" || true)
(( used > 50 )) || fail "only $used staged Boost headers were read: is the probe including them?"

! ldd "$tmp/probe" | grep -q boost || fail "the probe links Boost dynamically: $(ldd "$tmp/probe" | grep boost)"
out=$("$tmp/probe" --n 3)
[[ "$out" == "n=3 hidden=64" ]] || fail "the probe printed '$out'"

# Staging again replaces the folder whole: nothing of the old one survives.
touch "$deps/include/stale_file"
"$ROOT/scripts/stage_gpu_deps.sh" "$deps" > /dev/null || fail "staging again"
[[ ! -e "$deps/include/stale_file" ]] || fail "a file of the old staged folder survived"
ls "$tmp" | grep -q "deps.tmp" && fail "a temporary folder was left behind"
echo "PASS: staged $(du -sh "$deps" | cut -f1); the probe built from it alone and ran"
