// Verifications per second of one sandbox rank on the CPU: a WorkerPool of `leap worker`
// processes (2 by default, as in production) behind one Verifier, fed level-1 answers with the
// interpreter sizes (cpu_params) from several client threads, as the rollout ranks feed it.
//
//  - BM_VerifyLevel1Fresh: every answer is new to the sandbox (a unique comment defeats the
//    compile cache), so each verification compiles with NVRTC and runs 3 trials in a worker;
//    reference outputs are already cached (they are computed once per task and trial).
//  - BM_VerifyLevel1CacheHit: the same answers again, with the result cache off: compile-cache
//    hits in the workers and reference-cache hits in the supervisor; what is left is the
//    protocol and the 3 trials.
//  - BM_VerifyLevel1ResultCacheHit: the same answers again with the result cache on (the
//    default): identical answers are judged without a worker.
//  - BM_VerifyFormatError: an answer without a code block, rejected before any worker.
//  - Confinement's cost, A/B interleaved (the machine's noise is about ±15%): for each of 5
//    repetitions, BM_VerifyFresh_confine_{on,off}/rep (2 workers, 4 clients, fresh answers) and
//    BM_WorkerSpawn_confine_{on,off}/rep (one worker from posix_spawn to its ready frame: exec,
//    the NVRTC warm-up and, when on, the user change, Landlock and seccomp).
//  - BM_TrialInputs/{drawn_1_thread,drawn_2_threads,cached}: a worker's host work for one trial's
//    inputs at the GPU sizes of L1/relu (16.7M normal floats and the output), drawn on 1 or 2
//    threads (a miss of the worker's input cache) against a hit (a task's later jobs), each with
//    the copy and the output's poisoning a job makes.
//  - BM_CompareOutputs: the supervisor's element-wise check of one trial's output at that size
//    against the reference's (a candidate is compared three times a verification on a GPU: two
//    trials at GPU sizes and one timed run against the checked one).
//  - BM_JobHostWork: a worker's host work for one GPU job of an honest L1/relu answer, as on a
//    GPU (two trials at GPU sizes, the first timed: 1 warm-up and 3 runs; the reference's time
//    is cached by a first job), with the device's side cut to what a device does: an executor whose
//    memory is host memory, with a GPU's 4 KiB guard zones, whose kernels are a host loop. The
//    input cache is warm (a task's later jobs). What is left is the staging, read-backs, checks
//    and copies of JobRunner: the part this benchmark follows from one commit to the next.
//
// items_per_second is verifications per second (wall clock). Run from the repository root.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "sandbox/compare.h"
#include "sandbox/cpu_executor.h"
#include "sandbox/job_runner.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace leap::sandbox {
namespace {

struct Rank {
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<Verifier> verifier;
  tasks::Suite suite;
};

// One sandbox rank per (worker count, result cache on/off, confinement), started on first use
// and kept.
Rank& rank_with(int workers, bool result_cache, const std::string& confine = "on") {
  static std::map<std::tuple<int, bool, std::string>, Rank> ranks;
  Rank& r = ranks[{workers, result_cache, confine}];
  if (r.pool) return r;
  auto suite = tasks::load_suite("tasks/level1.jsonl");
  if (!suite) {
    std::fprintf(stderr, "%s (run from the repository root)\n", suite.status().message().c_str());
    std::exit(2);
  }
  r.suite = std::move(*suite);
  WorkerPoolOptions o;
  o.leap_binary = std::string(LEAP_BINARY_DIR) + "/src/apps/leap";
  o.config.device = "cpu";
  o.config.workers = workers;
  o.config.confine = confine;
  if (!result_cache) o.config.result_cache_entries = 0;
  auto pool = WorkerPool::start(o);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool.status().message().c_str());
    std::exit(1);
  }
  r.pool = std::move(*pool);
  r.verifier = std::make_unique<Verifier>(*r.pool, o.config);
  for (const auto& t : r.suite.tasks)
    r.verifier->verify(t, t.reference);  // reference outputs cached
  return r;
}

// The reference answer with a comment that makes its source unique when `salt` is.
std::string salted(const std::string& reference, uint64_t salt) {
  std::string out = reference;
  size_t at = out.find("```cuda\n");
  out.insert(at + 8, "// candidate " + std::to_string(salt) + "\n");
  return out;
}

void run_batch(benchmark::State& state, bool fresh, bool result_cache,
               const std::string& confine = "on") {
  const int workers = static_cast<int>(state.range(0));
  const int clients = static_cast<int>(state.range(1));
  Rank& r = rank_with(workers, result_cache, confine);
  static std::atomic<uint64_t> salt{1};
  const size_t n = r.suite.tasks.size();
  int64_t done = 0, failed = 0;
  // Repeated answers are measured warm: one untimed pass puts them in the caches.
  if (!fresh)
    for (const auto& t : r.suite.tasks) r.verifier->verify(t, salted(t.reference, 0));
  for (auto _ : state) {
    std::atomic<size_t> next{0};
    std::atomic<int64_t> bad{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        for (size_t i; (i = next++) < n;) {
          const auto& t = r.suite.tasks[i];
          std::string answer = fresh ? salted(t.reference, salt++) : salted(t.reference, 0);
          if (r.verifier->verify(t, answer).verdict != Verdict::kOk) ++bad;
        }
      });
    }
    for (auto& th : threads) th.join();
    done += static_cast<int64_t>(n);
    failed += bad;
  }
  state.SetItemsProcessed(done);
  state.counters["not_ok"] = static_cast<double>(failed);
}

void BM_VerifyLevel1Fresh(benchmark::State& state) {
  run_batch(state, true, true);
}
void BM_VerifyLevel1CacheHit(benchmark::State& state) {
  run_batch(state, false, false);
}
void BM_VerifyLevel1ResultCacheHit(benchmark::State& state) {
  run_batch(state, false, true);
}

void BM_VerifyFormatError(benchmark::State& state) {
  Rank& r = rank_with(2, true);
  const auto& t = r.suite.tasks.front();
  for (auto _ : state) benchmark::DoNotOptimize(r.verifier->verify(t, "no code here"));
  state.SetItemsProcessed(state.iterations());
}

// One worker's start, from posix_spawn to its ready frame.
void spawn_worker(benchmark::State& state, const std::string& confine) {
  WorkerPoolOptions o;
  o.leap_binary = std::string(LEAP_BINARY_DIR) + "/src/apps/leap";
  o.config.device = "cpu";
  o.config.workers = 1;
  o.config.confine = confine;
  for (auto _ : state) {
    auto pool = WorkerPool::start(o);
    if (!pool) {
      state.SkipWithError(pool.status().message().c_str());
      return;
    }
    state.PauseTiming();  // the pool's shutdown is not part of the start
    pool->reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

// The confinement A/B pairs, interleaved so that a slow spell of the machine hits both.
void register_confinement_pairs() {
  for (int rep = 0; rep < 5; ++rep) {
    for (const std::string confine : {"on", "off"}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_VerifyFresh_confine_{}/rep{}", confine, rep).c_str(),
          [confine](benchmark::State& st) { run_batch(st, true, true, confine); })
          ->Args({2, 4})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(1);
      benchmark::RegisterBenchmark(
          fmt::format("BM_WorkerSpawn_confine_{}/rep{}", confine, rep).c_str(),
          [confine](benchmark::State& st) { spawn_worker(st, confine); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(3);
    }
  }
}

namespace {

// L1/relu of tasks/level1.jsonl (kept in `suite`), or null with the benchmark skipped.
const tasks::Task* relu_task(benchmark::State& state, Expected<tasks::Suite>* suite) {
  *suite = tasks::load_suite("tasks/level1.jsonl");
  if (*suite)
    for (const auto& t : (*suite)->tasks)
      if (t.id == "L1/relu") return &t;
  state.SkipWithError("run from the repository root (tasks/level1.jsonl with L1/relu)");
  return nullptr;
}

void BM_TrialInputs(benchmark::State& state, bool cached, int threads) {
  Expected<tasks::Suite> suite = invalid_input("not loaded");
  const tasks::Task* relu = relu_task(state, &suite);
  if (!relu) return;
  CpuExecutor cpu(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{});
  JobRunner runner(cpu, TimingOptions{}, cached ? size_t{1} << 30 : 0, threads);
  TrialSpec trial;
  trial.sizes = tasks::SizeSet::kGpu;
  if (cached && !runner.trial_inputs(*relu, trial)) state.SkipWithError("generating inputs");
  for (auto _ : state) {
    auto inputs = runner.trial_inputs(*relu, trial);
    if (!inputs) std::abort();
    std::vector<tasks::BufferData> data = **inputs;  // as JobRunner::run copies and poisons them
    for (auto& b : data)
      if (b.role == tasks::Role::kOut) tasks::fill_poison(b);
    benchmark::DoNotOptimize(data.data());
  }
}
void BM_CompareOutputs(benchmark::State& state) {
  Expected<tasks::Suite> suite = invalid_input("not loaded");
  const tasks::Task* relu = relu_task(state, &suite);
  if (!relu) return;
  auto inputs = tasks::generate_inputs(*relu, relu->params, 1, 0, 2);
  if (!inputs) std::abort();
  // The reference's output, and a candidate's equal to it but for rounding in the last bit.
  std::vector<tasks::BufferData> ref = {(*inputs)[1]}, cand = {(*inputs)[1]};
  const auto n = static_cast<size_t>(ref[0].elements);
  std::vector<float> x(n);
  std::memcpy(x.data(), (*inputs)[0].bytes.data(), n * 4);
  for (size_t i = 0; i < n; ++i) {
    const float r = std::max(x[i], 0.f), c = std::nextafter(r, 1.f);
    std::memcpy(ref[0].bytes.data() + 4 * i, &r, 4);
    std::memcpy(cand[0].bytes.data() + 4 * i, &c, 4);
  }
  for (auto _ : state) {
    Comparison c = compare_outputs(*relu, relu->params, cand, ref);
    if (!c.ok) std::abort();
    benchmark::DoNotOptimize(c.max_abs_err);
  }
}
BENCHMARK(BM_CompareOutputs)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// Host memory standing in for a GPU's (see BM_JobHostWork): allocations are zero-filled (calloc
// maps zero pages, as a device's memset costs the host nothing), copies are memcpy, and a launch
// of a kernel with the arguments (x, out, n) computes relu(x) on the host. Compilation is
// NVRTC's, cached.
class HostMemoryExecutor final : public Executor {
 public:
  HostMemoryExecutor() : cpu_(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{}) {}
  ~HostMemoryExecutor() override {
    for (auto& [p, n] : sizes_) std::free(reinterpret_cast<void*>(p));
  }
  const char* name() const override { return "host"; }
  CompileOutcome compile(const std::string& source, const std::vector<std::string>& names) override {
    return cpu_.compile(source, names);
  }
  Expected<uint64_t> allocate(size_t bytes) override {
    void* p = std::calloc(bytes, 1);
    if (!p) return internal_error("out of host memory");
    sizes_[reinterpret_cast<uint64_t>(p)] = bytes;
    return reinterpret_cast<uint64_t>(p);
  }
  void release(uint64_t address) override {
    sizes_.erase(address);
    std::free(reinterpret_cast<void*>(address));
  }
  Status write(uint64_t a, const void* d, size_t n) override {
    std::memcpy(reinterpret_cast<void*>(a), d, n);
    return Status::ok();
  }
  Status read(uint64_t a, void* d, size_t n) override {
    std::memcpy(d, reinterpret_cast<const void*>(a), n);
    return Status::ok();
  }
  Status copy(uint64_t to, uint64_t from, size_t n) override { return write(to, reinterpret_cast<const void*>(from), n); }
  ExecOutcome launch(const Program&, const PlannedLaunch&, const std::vector<std::vector<uint8_t>>& args) override {
    uint64_t x = 0, out = 0;
    int32_t n = 0;
    std::memcpy(&x, args[0].data(), 8);
    std::memcpy(&out, args[1].data(), 8);
    std::memcpy(&n, args[2].data(), 4);
    const float* xs = reinterpret_cast<const float*>(x);
    float* os = reinterpret_cast<float*>(out);
    for (int32_t i = 0; i < n; ++i) os[i] = std::max(xs[i], 0.f);
    return {};
  }
  ExecOutcome synchronize() override { return {}; }
  size_t guard_bytes() const override { return 4096; }
  bool can_time() const override { return true; }
  ExecOutcome time(const std::function<ExecOutcome()>& run_once, const std::function<Status()>& prepare,
                   const TimingOptions& o, Timing* out) override {
    for (int i = 0; i < o.warmups + o.min_launches; ++i) {
      if (Status st = prepare(); !st) return {Verdict::kSandboxError, st.message()};
      if (ExecOutcome r = run_once(); !r.ok()) return r;
    }
    out->launches = o.min_launches;
    out->median_ms = 1.0;
    return {};
  }

 private:
  CpuExecutor cpu_;
  std::map<uint64_t, size_t> sizes_;
};

void BM_JobHostWork(benchmark::State& state) {
  Expected<tasks::Suite> suite = invalid_input("not loaded");
  const tasks::Task* relu = relu_task(state, &suite);
  if (!relu) return;
  HostMemoryExecutor host;
  JobRunner runner(host, TimingOptions{1, 3, 0.0, 3}, size_t{1} << 30, 1);
  JobRequest req;
  req.task = *relu;
  req.code = R"(__global__ void k(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f);
}
// launch: k<<<cdiv(n, 256), 256>>>(x, out, n))";
  req.time = true;
  for (int t = 0; t < 2; ++t) {
    TrialSpec spec;
    spec.sizes = tasks::SizeSet::kGpu;
    spec.trial = t;
    req.trials.push_back(spec);
  }
  // Warm: the compile cache, the input cache and the reference's time (cached per task).
  if (JobReport r = runner.run(req); !r.outcome.ok()) {
    state.SkipWithError(r.outcome.message.c_str());
    return;
  }
  for (auto _ : state) {
    JobReport r = runner.run(req);
    if (!r.outcome.ok()) std::abort();
    benchmark::DoNotOptimize(r.outputs.data());
  }
}
BENCHMARK(BM_JobHostWork)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

BENCHMARK_CAPTURE(BM_TrialInputs, drawn_1_thread, false, 1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK_CAPTURE(BM_TrialInputs, drawn_2_threads, false, 2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK_CAPTURE(BM_TrialInputs, cached, true, 1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// Args: {workers, client threads}.
BENCHMARK(BM_VerifyLevel1Fresh)
    ->Args({2, 4})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);
BENCHMARK(BM_VerifyLevel1CacheHit)
    ->Args({2, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_VerifyLevel1ResultCacheHit)
    ->Args({2, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_VerifyFormatError)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace leap::sandbox

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  leap::sandbox::register_confinement_pairs();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
