// SandboxService: pool + verifier + a small dispatch queue for submit().
#include "sandbox/sandbox_service.h"

#include <chrono>

#include "sandbox/nvrtc_compiler.h"

namespace leap::sandbox {

Expected<std::unique_ptr<SandboxService>> SandboxService::start(const SandboxConfig& config,
                                                                const std::string& leap_binary) {
  // Without NVRTC every candidate and every reference would fail to compile; better to say so
  // once, at startup, than to retry each job as an infrastructure error.
  if (!nvrtc_available())
    return unsupported("this build of leap has no NVRTC (it was configured without the CUDA toolkit), so its sandbox "
                       "cannot compile any kernel: rebuild where the CUDA toolkit is installed (LEAP_CUDA=AUTO or ON)");
  WorkerPoolOptions o;
  o.leap_binary = leap_binary;
  o.config = config;
  LEAP_ASSIGN_OR_RETURN(auto pool, WorkerPool::start(o));
  std::unique_ptr<SandboxService> s(new SandboxService());
  s->pool_ = std::move(pool);
  s->verifier_ = std::make_unique<Verifier>(*s->pool_, config);
  s->simulated_exec_ms_ = config.simulated_exec_ms;
  for (int i = 0; i < config.workers; ++i)
    s->dispatchers_.emplace_back([p = s.get()] { p->dispatch(); });
  return s;
}

SandboxService::~SandboxService() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : dispatchers_) t.join();
}

VerifyResult SandboxService::verify(const tasks::Task& task, std::string_view completion) {
  return verifier_->verify(task, completion);
}

namespace {

// Whether the candidate got as far as running: only then would a GPU have timed it.
bool ran(Verdict v) {
  return v != Verdict::kFormatError && v != Verdict::kCompileError && v != Verdict::kUnsupported &&
         v != Verdict::kSandboxError;
}

}  // namespace

std::future<VerifyResult> SandboxService::submit(tasks::Task task, std::string completion) {
  std::packaged_task<VerifyResult()> job(
      [this, task = std::move(task), completion = std::move(completion)] {
        const auto t0 = std::chrono::steady_clock::now();
        VerifyResult r = verifier_->verify(task, completion);
        if (simulated_exec_ms_ > 0 && ran(r.verdict))
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(simulated_exec_ms_));
        r.slot_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return r;
      });
  auto future = job.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return future;
}

void SandboxService::dispatch() {
  for (;;) {
    std::packaged_task<VerifyResult()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is done
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace leap::sandbox
