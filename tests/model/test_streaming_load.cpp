// Loading a model folder streams it: the safetensors files are mapped and converted one tensor
// at a time into the backend, so the process's peak memory while loading is the model itself
// (parameters and gradients) plus the file's pages and one tensor's staging, and not a second
// fp32 copy of every weight as before. Measured with the kernel's own peak-RSS counter (VmHWM,
// reset through /proc/self/clear_refs), so no bookkeeping of ours is trusted.
#include <gtest/gtest.h>
#include <malloc.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend/cpu_backend.h"
#include "model/checkpoint.h"
#include "test_model_configs.h"

namespace leap::model {
namespace {

long status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
  return -1;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

ModelConfig config() { return testing::small_config("llama", 512, 128, 352, 12, 256); }

TEST(StreamingLoad, PeakMemoryIsTheModelNotASecondCopy) {
  // Every large block is its own mapping, returned to the kernel when freed, so RSS follows
  // what is allocated (glibc would otherwise raise its mmap threshold and keep freed pages).
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  const auto dir = std::filesystem::temp_directory_path() / ("leap_stream_" + std::to_string(::getpid()));
  backend::CpuBackend be(1);
  size_t P = 0, largest = 0;
  {
    Transformer m(config(), be);
    m.init_random(3);
    ASSERT_TRUE(save_model(dir.string(), m, DType::kBF16).ok());
    P = m.num_params();
    for (const auto& t : m.layout().tensors()) largest = std::max(largest, t.numel);
  }
  const long file_kib = static_cast<long>(std::filesystem::file_size(dir / "model.safetensors") / 1024);
  if (!reset_peak_rss()) GTEST_SKIP() << "this kernel does not let a process reset its peak RSS";
  const long before = status_kib("VmRSS:");
  ASSERT_EQ(status_kib("VmHWM:"), before) << "the peak RSS was not reset";
  auto loaded = load_model(dir.string(), be);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  const long growth = status_kib("VmHWM:") - before;
  // The model's own buffers (fp32 parameters and gradients), the mapped file, one tensor staged.
  const long model_kib = static_cast<long>(2 * P * sizeof(float) / 1024);
  const long budget = model_kib + file_kib + static_cast<long>(largest * sizeof(float) / 1024) + 1024;
  const long second_copy = static_cast<long>(P * sizeof(float) / 1024);
  std::printf("peak growth %ld KiB: model %ld KiB, file %ld KiB, budget %ld KiB (a second fp32 copy: %ld KiB)\n",
              growth, model_kib, file_kib, budget, second_copy);
  EXPECT_LE(growth, budget);
  ASSERT_GT(second_copy, budget - model_kib - file_kib) << "the model is too small for the test to fail";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace leap::model
