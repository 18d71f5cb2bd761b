// check_device_only: the answer holds device code only (docs/design.md: no host code written by the
// model is ever compiled or run). The scan runs on the code with comments and string literals
// blanked out, so a launch line (a comment) or a printf format never trips it. It is a filter for
// clear feedback, not the security boundary: the worker's isolation is.
#include <fmt/format.h>

#include <array>
#include <cctype>

#include "sandbox/answer.h"

namespace leap::sandbox {

namespace {

// Headers NVRTC resolves from the toolkit's include folder or its built-ins.
constexpr std::array<std::string_view, 9> kAllowedHeaders = {
    "cuda_fp16.h",      "cuda_bf16.h",     "cuda_runtime.h",
    "cuda_fp8.h",       "mma.h",           "cooperative_groups.h",
    "cuda/std/cstdint", "cuda/std/limits", "cooperative_groups/reduce.h"};

// Host runtime calls: a kernel never needs them, and their presence means the answer tries to
// run its own host program.
constexpr std::array<std::string_view, 14> kHostCalls = {
    "cudaMalloc",       "cudaMallocManaged", "cudaMallocHost",
    "cudaHostAlloc",    "cudaFree",          "cudaMemcpy",
    "cudaMemcpyAsync",  "cudaMemset",        "cudaDeviceSynchronize",
    "cudaLaunchKernel", "cudaStreamCreate",  "cudaSetDevice",
    "cudaDeviceReset",  "cudaMemcpyToSymbol"};

}  // namespace

std::span<const std::string_view> allowed_device_headers() { return kAllowedHeaders; }

std::string blank_comments_and_strings(std::string_view code) {
  std::string out(code);
  size_t i = 0;
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else if (out[i] == '"' || out[i] == '\'') {
      char q = out[i++];
      while (i < out.size() && out[i] != q && out[i] != '\n') {
        if (out[i] == '\\' && i + 1 < out.size()) out[i++] = ' ';
        out[i++] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

int line_of(std::string_view text, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Finds `word` as a whole identifier; npos when absent.
size_t find_word(std::string_view text, std::string_view word, size_t from = 0) {
  for (size_t p = text.find(word, from); p != std::string_view::npos; p = text.find(word, p + 1)) {
    bool left = p == 0 || !is_ident_char(text[p - 1]);
    bool right = p + word.size() >= text.size() || !is_ident_char(text[p + word.size()]);
    if (left && right) return p;
  }
  return std::string_view::npos;
}

Status check_includes(std::string_view original, std::string_view blanked) {
  // Includes are found on the blanked text (so commented-out ones are ignored) and their header
  // names read from the original (where the quotes still hold the name).
  size_t pos = 0;
  while ((pos = blanked.find('#', pos)) != std::string_view::npos) {
    size_t p = pos + 1;
    while (p < blanked.size() && (blanked[p] == ' ' || blanked[p] == '\t')) ++p;
    if (blanked.compare(p, 7, "include") == 0) {
      size_t eol = original.find('\n', p);
      std::string_view rest =
          original.substr(p + 7, eol == std::string_view::npos ? eol : eol - p - 7);
      size_t b = rest.find_first_of("<\"");
      size_t e = b == std::string_view::npos ? b : rest.find_first_of(">\"", b + 1);
      std::string_view header = e == std::string_view::npos ? rest : rest.substr(b + 1, e - b - 1);
      bool ok = false;
      for (auto h : kAllowedHeaders) ok = ok || h == header;
      if (!ok)
        return invalid_input(fmt::format(
            "line {}: #include of '{}' is not allowed: the answer is device code only; it may "
            "include cuda_fp16.h, cuda_bf16.h, cuda_runtime.h, cuda_fp8.h, mma.h and "
            "cooperative_groups.h",
            line_of(original, pos), header.substr(0, 80)));
    }
    pos = p;
  }
  return Status::ok();
}

}  // namespace

Status check_device_only(std::string_view code) {
  const std::string blanked = blank_comments_and_strings(code);
  LEAP_RETURN_IF_ERROR(check_includes(code, blanked));
  const std::string_view text = blanked;
  if (size_t p = find_word(text, "main"); p != std::string_view::npos) {
    size_t q = text.find_first_not_of(" \t\n", p + 4);
    if (q != std::string_view::npos && text[q] == '(')
      return invalid_input(fmt::format(
          "line {}: the answer defines or calls main(): write device code only (kernels and "
          "__device__ functions); the sandbox launches kernels from the `// launch:` lines",
          line_of(text, p)));
  }
  if (size_t p = text.find("<<<"); p != std::string_view::npos)
    return invalid_input(fmt::format(
        "line {}: a kernel launch (<<<...>>>) in code: launches are written only as "
        "`// launch: NAME<<<GRID, BLOCK>>>(ARGS)` comment lines, and the sandbox runs them",
        line_of(text, p)));
  for (auto call : kHostCalls) {
    if (size_t p = find_word(text, call); p != std::string_view::npos)
      return invalid_input(fmt::format(
          "line {}: host runtime call '{}': the answer is device code only; the sandbox "
          "allocates the task's buffers and `// scratch:` buffers and copies them itself",
          line_of(text, p), call));
  }
  return Status::ok();
}

}  // namespace leap::sandbox
