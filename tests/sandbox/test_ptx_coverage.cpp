// PTX coverage: every opcode NVRTC emits (at the project's fixed target, compute_80) for the
// kernel corpus of these tests, for the reference answers of tasks/level1.jsonl and
// tasks/level2.jsonl, and for the device code of cuda/ (every kernel instantiation the backend
// uses, from tests/cuda/kernels_nvcc_check.cu), must be implemented by the
// interpreter: each module must parse and decode. The test also renders the coverage table into
// docs/ptx_coverage.md. That file records a digest of the sources it was made from, and the test
// fails when the digest of today's sources differs (the file is stale), unless the file was
// generated with another NVRTC version, which it then only reports. It does not require the
// table's counts to match: NVRTC 13.0 does not emit the same PTX every time (for the same
// sources a CI run emitted 245 distinct opcodes where six runs here gave 244; a later run here
// gave 245 too: one `ld.shared.v2.f32` more in cuda/'s kernels), so the differences are printed as
// a note. With
// LEAP_PTX_COVERAGE_OUT=FILE set, it writes the table to FILE instead of comparing:
//   LEAP_PTX_COVERAGE_OUT=docs/ptx_coverage.md build/tests/sandbox/test_ptx_coverage
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "common/fnv_hash.h"
#include "sandbox/nvrtc_compiler.h"
#include "sandbox/ptx/decoder.h"
#include "sandbox/ptx/interpreter.h"
#include "sandbox/ptx/parser.h"

namespace leap::sandbox::ptx {
namespace {

namespace fs = std::filesystem;

struct Source {
  std::string group;  // "corpus", "level1", "level2", "cuda"
  std::string name;
  std::string code;
  std::vector<std::string> kernels;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Kernels of the test corpus: every raw-string source with a __global__ in it. The kernels to
// instantiate are the name list that follows it (`R"(...)", {"k<128>"}`), or else every
// non-template kernel it defines.
std::vector<Source> corpus_sources() {
  std::vector<Source> out;
  const std::regex list(R"re(^\)",\s*\{([^}]*)\})re");
  const std::regex quoted(R"re("([^"]*)")re");
  const std::regex global(R"(__global__\s+void\s+([A-Za-z_][A-Za-z0-9_]*))");
  for (const auto& entry : fs::directory_iterator(fs::path(LEAP_SOURCE_DIR) / "tests/sandbox")) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("test_ptx_", 0) != 0 || !file.ends_with(".cpp") || file == "test_ptx_coverage.cpp")
      continue;
    const std::string text = read_file(entry.path());
    int n = 0;
    for (size_t a = text.find("R\"("); a != std::string::npos; a = text.find("R\"(", a + 3)) {
      const size_t b = text.find(")\"", a + 3);
      if (b == std::string::npos) break;
      const std::string code = text.substr(a + 3, b - a - 3);
      if (code.find("__global__") == std::string::npos) continue;
      Source s{"corpus", file + "#" + std::to_string(n++), code, {}};
      std::smatch m;
      const std::string after = text.substr(b, 400);
      if (std::regex_search(after, m, list)) {
        const std::string names = m[1];
        for (std::sregex_iterator q(names.begin(), names.end(), quoted), e; q != e; ++q) {
          s.kernels.push_back((*q)[1]);
        }
      } else {
        for (std::sregex_iterator g(code.begin(), code.end(), global), e; g != e; ++g) {
          s.kernels.push_back((*g)[1]);
        }
      }
      out.push_back(std::move(s));
      a = b;
    }
  }
  return out;
}

std::vector<Source> suite_sources(const std::string& suite) {
  std::vector<Source> out;
  std::ifstream in(fs::path(LEAP_SOURCE_DIR) / "tasks" / (suite + ".jsonl"));
  const std::regex launch(R"(//\s*launch:\s*([A-Za-z_][A-Za-z0-9_:<>, ]*?)\s*<<<)");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    const std::string ref = j.at("reference").get<std::string>();
    const size_t a = ref.find("```cuda"), b = ref.rfind("```");
    if (a == std::string::npos || b <= a) continue;
    Source s{suite, j.at("id").get<std::string>(), ref.substr(a + 7, b - a - 7), {}};
    for (std::sregex_iterator it(s.code.begin(), s.code.end(), launch), e; it != e; ++it) {
      std::string k = (*it)[1];
      if (std::find(s.kernels.begin(), s.kernels.end(), k) == s.kernels.end())
        s.kernels.push_back(k);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The device code of cuda/: tests/cuda/kernels_nvcc_check.cu includes every kernel header and
// explicitly instantiates each kernel for the types and head dims the backend uses, so NVRTC
// emits exactly the kernels the backend launches (the headers alone hold only templates, which
// emit nothing). Every header with a kernel must be included there, or its code is not covered.
std::vector<Source> cuda_sources() {
  const fs::path check = fs::path(LEAP_SOURCE_DIR) / "tests/cuda/kernels_nvcc_check.cu";
  const std::string code = read_file(check);
  EXPECT_FALSE(code.empty()) << check << " not found";
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(LEAP_SOURCE_DIR) / "cuda")) {
    if (entry.path().extension() != ".cuh") continue;
    if (read_file(entry.path()).find("__global__") == std::string::npos) continue;
    const std::string include =
        "#include \"" + fs::relative(entry.path(), LEAP_SOURCE_DIR).generic_string() + "\"";
    EXPECT_NE(code.find(include), std::string::npos)
        << check.filename() << " does not instantiate the kernels of " << entry.path();
  }
  return {{"cuda", "kernels_nvcc_check.cu", code, {}}};
}

// FNV-1a over every file the table is made from, each as its path and its text, in path order,
// so that any change to a source changes it: the corpus's test files and this test (which
// extracts the kernels), the two task suites, the instantiation file, every file of
// cuda/kernels/ (what it includes) and the compiler's options (src/sandbox/nvrtc_compiler.cpp).
std::string sources_digest() {
  const fs::path root(LEAP_SOURCE_DIR);
  std::vector<fs::path> files = {"tasks/level1.jsonl", "tasks/level2.jsonl",
                                 "tests/cuda/kernels_nvcc_check.cu", "src/sandbox/nvrtc_compiler.cpp"};
  for (const auto& entry : fs::directory_iterator(root / "tests/sandbox")) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("test_ptx_", 0) == 0 && file.ends_with(".cpp")) files.push_back(fs::relative(entry.path(), root));
  }
  for (const auto& entry : fs::recursive_directory_iterator(root / "cuda/kernels")) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), root));
  }
  std::sort(files.begin(), files.end());
  uint64_t h = kFnv1aBasis;
  for (const fs::path& f : files) {
    h = fnv1a_bytes(f.generic_string() + '\0', h);
    h = fnv1a_bytes(read_file(root / f) + '\0', h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(files.size()) + " files, FNV-1a " + hex;
}

// How docs/ptx_coverage.md is made (from the source folder, after scripts/build.sh).
constexpr const char* kRegenerate =
    "LEAP_PTX_COVERAGE_OUT=docs/ptx_coverage.md build/tests/sandbox/test_ptx_coverage";

// opcode -> group -> occurrences
using Seen = std::map<std::string, std::map<std::string, int>>;

std::string coverage_markdown(const Seen& seen, const std::map<std::string, int>& modules_per_group,
                              size_t unsupported, const std::string& digest) {
  std::ostringstream md;
  md << "# PTX coverage of the interpreter\n\n"
     << "Every opcode (with its modifiers and types) that NVRTC " << nvrtc_version()
     << " emits at the project's PTX target (`compute_80`) for the test corpus "
        "(`tests/sandbox/test_ptx_*.cpp`), the reference answers of `tasks/level1.jsonl` and "
        "`tasks/level2.jsonl`, and the device code of `cuda/` (every kernel instantiation the "
        "backend uses, from `tests/cuda/kernels_nvcc_check.cu`), with the number of occurrences "
        "in each and whether the interpreter implements it. Generated by the "
        "`test_ptx_coverage` test, which fails when this file is stale:\n\n"
     << "```\n" << kRegenerate << "\n```\n\n"
     << "Modules compiled: ";
  bool first = true;
  for (const auto& [g, n] : modules_per_group) {
    md << (first ? "" : ", ") << g << " " << n;
    first = false;
  }
  md << ". Distinct opcodes: " << seen.size() << "; not implemented: " << unsupported
     << " (the corpus's `wmma` kernel is the negative test of kUnsupported).\n\n"
     << "Sources: " << digest << ". The test fails when the sources' digest differs from this "
        "one. It does not compare the counts: NVRTC's output for the same sources is not the "
        "same on every machine, so another machine's table can differ by an opcode or a count, "
        "and the test prints such differences as a note.\n\n"
     << "| opcode | corpus | level1 | level2 | cuda | implemented |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  for (const auto& [op, groups] : seen) {
    auto n = [&](const char* g) {
      auto it = groups.find(g);
      return it == groups.end() ? std::string("") : std::to_string(it->second);
    };
    md << "| `" << op << "` | " << n("corpus") << " | " << n("level1") << " | " << n("level2")
       << " | " << n("cuda") << " | " << (opcode_supported(op) ? "yes" : "**no**") << " |\n";
  }
  return md.str();
}

// The NVRTC version a coverage file names ("that NVRTC 13.0 emits"), or "" if it names none.
std::string nvrtc_version_of(const std::string& markdown) {
  std::smatch m;
  static const std::regex version(R"(that NVRTC ([0-9]+\.[0-9]+) emits)");
  return std::regex_search(markdown, m, version) ? std::string(m[1]) : std::string();
}

// The sources' digest a coverage file records ("Sources: N files, FNV-1a HEX"), or "".
std::string digest_of(const std::string& markdown) {
  std::smatch m;
  static const std::regex digest(R"(Sources: ([0-9]+ files, FNV-1a [0-9a-f]{16})\.)");
  return std::regex_search(markdown, m, digest) ? std::string(m[1]) : std::string();
}

// The lines of the table (`| opcode | ... |`) that are in one text and not in the other.
std::string table_differences(const std::string& committed, const std::string& fresh) {
  auto rows = [](const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("| `", 0) == 0) out.insert(line);
    }
    return out;
  };
  const auto a = rows(committed), b = rows(fresh);
  std::string out;
  for (const auto& line : a) {
    if (!b.count(line)) out += "  file:  " + line + "\n";
  }
  for (const auto& line : b) {
    if (!a.count(line)) out += "  fresh: " + line + "\n";
  }
  return out;
}

TEST(PtxCoverage, EveryOpcodeNvrtcEmitsIsImplemented) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  std::vector<Source> sources = corpus_sources();
  ASSERT_GE(sources.size(), 15u) << "the corpus was not found";
  for (const char* suite : {"level1", "level2"}) {
    auto s = suite_sources(suite);
    sources.insert(sources.end(), s.begin(), s.end());
  }
  auto c = cuda_sources();
  sources.insert(sources.end(), c.begin(), c.end());

  NvrtcCompiler compiler;
  Seen seen;
  std::map<std::string, int> modules_per_group;
  std::vector<std::string> failures;
  for (const Source& s : sources) {
    CompileOptions o;
    o.name_expressions = s.kernels;
    if (s.group == "cuda") o.extra_options = {"-I" + std::string(LEAP_SOURCE_DIR)};
    auto r = compiler.compile(s.code, o);
    if (!r->ok) {
      failures.push_back(s.name + ": does not compile: " + r->log);
      continue;
    }
    ++modules_per_group[s.group];
    auto parsed = parse_ptx(r->ptx);
    ASSERT_TRUE(parsed.has_value()) << s.name << ": " << parsed.status().message();
    for (const Function& f : parsed->functions) {
      for (const Statement& st : f.body) {
        if (st.kind == Statement::Kind::kInstruction) ++seen[st.opcode][s.group];
      }
    }
    auto m = Module::parse(r->ptx);
    if (!m.has_value()) {
      const bool expected = s.name.find("test_ptx_outcomes") != std::string::npos &&
                            m.status().code() == StatusCode::kUnsupported;
      if (!expected) failures.push_back(s.name + ": " + m.status().message());
    }
  }
  size_t unsupported = 0;
  for (const auto& [op, groups] : seen) {
    const bool ok = opcode_supported(op);
    const bool only_negative_test = groups.size() == 1 && groups.count("corpus") &&
                                    (op.rfind("wmma", 0) == 0 || op.rfind("mma", 0) == 0);
    if (!ok && !only_negative_test) {
      ++unsupported;
      failures.push_back("opcode not implemented: " + op);
    }
  }
  EXPECT_TRUE(failures.empty()) << [&] {
    std::string all;
    for (const auto& f : failures) all += f + "\n";
    return all;
  }();
  EXPECT_EQ(unsupported, 0u);

  const std::string digest = sources_digest();
  const std::string table = coverage_markdown(seen, modules_per_group, unsupported, digest);
  if (const char* out = std::getenv("LEAP_PTX_COVERAGE_OUT")) {
    std::ofstream md(out);
    md << table;
    ASSERT_TRUE(md.good()) << "cannot write " << out;
    return;
  }
  const fs::path committed_path = fs::path(LEAP_SOURCE_DIR) / "docs/ptx_coverage.md";
  const std::string committed = read_file(committed_path);
  const std::string committed_nvrtc = nvrtc_version_of(committed);
  ASSERT_FALSE(committed_nvrtc.empty())
      << "docs/ptx_coverage.md names no NVRTC version, so it was not generated by this test; "
         "regenerate it from the source folder with\n  " << kRegenerate;
  if (committed_nvrtc != nvrtc_version()) {
    std::printf("note: docs/ptx_coverage.md is from NVRTC %s, this build has NVRTC %s: not "
                "compared\n", committed_nvrtc.c_str(), nvrtc_version().c_str());
    return;
  }
  EXPECT_EQ(digest_of(committed), digest)
      << "docs/ptx_coverage.md is stale: it was made from other sources (or names no digest); "
         "regenerate it from the source folder with\n  " << kRegenerate << "\n";
  if (const std::string diff = table_differences(committed, table); !diff.empty()) {
    std::printf("note: for the same sources, this NVRTC emitted PTX whose table differs from "
                "docs/ptx_coverage.md in these rows (not a failure):\n%s", diff.c_str());
  }
}
}  // namespace
}  // namespace leap::sandbox::ptx
