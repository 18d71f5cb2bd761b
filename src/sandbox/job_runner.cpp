// JobRunner: one job's trials on one executor. Buffers live in a TrialBuffers object that
// releases them on every path, so a failing candidate never leaks device memory in a
// long-lived worker. Guard zones hold a fixed byte pattern on both sides of every buffer.
#include "sandbox/job_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "common/rng.h"
#include "sandbox/answer.h"
#include "sandbox/compare.h"
#include "sandbox/marshal.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace leap::sandbox {

namespace {

constexpr uint8_t kGuardByte = 0xA5;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ExecOutcome infra(const std::string& what, const Status& st) {
  return {Verdict::kSandboxError, what + ": " + st.message()};
}

// The device side of one trial: every task buffer and scratch buffer, each inside a guard zone.
// Bodies go to and from the device directly, never through a framed host copy: at a GPU task's
// sizes (tens of MB a buffer) each host pass over a buffer costs more than its transfer.
class TrialBuffers {
 public:
  explicit TrialBuffers(Executor& ex) : ex_(ex), guard_(ex.guard_bytes(), kGuardByte) {}
  ~TrialBuffers() {
    for (uint64_t base : bases_) ex_.release(base);
  }
  TrialBuffers(const TrialBuffers&) = delete;
  TrialBuffers& operator=(const TrialBuffers&) = delete;

  // Allocates `size` bytes inside guard zones and uploads `bytes` (null: the allocation's zeros
  // stay); returns the address the kernel sees.
  Expected<uint64_t> add(const uint8_t* bytes, size_t size) {
    const size_t g = guard_.size();
    LEAP_ASSIGN_OR_RETURN(uint64_t base, ex_.allocate(size + 2 * g));
    bases_.push_back(base);
    sizes_.push_back(size);
    if (g > 0) {
      LEAP_RETURN_IF_ERROR(ex_.write(base, guard_.data(), g));
      LEAP_RETURN_IF_ERROR(ex_.write(base + g + size, guard_.data(), g));
    }
    if (bytes && size > 0) LEAP_RETURN_IF_ERROR(ex_.write(base + g, bytes, size));
    return base + g;
  }

  // Reads allocation `i`'s body into `out`; `guard_damage` says how its guards were changed
  // (empty: intact).
  Status read_back(size_t i, std::vector<uint8_t>* out, std::string* guard_damage) {
    out->resize(sizes_[i]);
    if (!out->empty()) LEAP_RETURN_IF_ERROR(ex_.read(body(i), out->data(), out->size()));
    return check_guards(i, guard_damage);
  }

  // Compares allocation `i`'s body with `expected` (null: zeros), reading it back in pieces, so
  // that no host copy of the whole buffer is made. *first_difference: the offset of the first
  // byte that differs, or the size when none does.
  Status compare(size_t i, const uint8_t* expected, size_t* first_difference, std::string* guard_damage) {
    const size_t n = sizes_[i];
    std::vector<uint8_t> piece(std::min(n, kPieceBytes));
    *first_difference = n;
    for (size_t at = 0; at < n; at += piece.size()) {
      const size_t len = std::min(piece.size(), n - at);
      LEAP_RETURN_IF_ERROR(ex_.read(body(i) + at, piece.data(), len));
      const bool same = expected ? std::memcmp(piece.data(), expected + at, len) == 0
                                 : std::all_of(piece.begin(), piece.begin() + static_cast<long>(len),
                                               [](uint8_t b) { return b == 0; });
      if (!same) {
        size_t k = 0;
        while (piece[k] == (expected ? expected[at + k] : 0)) ++k;
        *first_difference = at + k;
        break;
      }
    }
    return check_guards(i, guard_damage);
  }

  // Whether allocation `i`'s guards are intact (`guard_damage` empty) or how they were changed.
  Status check_guards(size_t i, std::string* guard_damage) {
    guard_damage->clear();
    const size_t g = guard_.size();
    if (g == 0) return Status::ok();
    std::vector<uint8_t> before(g), after(g);
    LEAP_RETURN_IF_ERROR(ex_.read(bases_[i], before.data(), g));
    LEAP_RETURN_IF_ERROR(ex_.read(body(i) + sizes_[i], after.data(), g));
    for (size_t k = g; k-- > 0;) {
      if (after[k] != kGuardByte) {
        *guard_damage = fmt::format("wrote up to {} bytes past its end", k + 1);
        return Status::ok();
      }
    }
    for (size_t k = 0; k < g; ++k) {
      if (before[k] != kGuardByte) {
        *guard_damage = fmt::format("wrote {} bytes before its start", g - k);
        return Status::ok();
      }
    }
    return Status::ok();
  }

 private:
  static constexpr size_t kPieceBytes = size_t{4} << 20;

  uint64_t body(size_t i) const { return bases_[i] + guard_.size(); }

  Executor& ex_;
  std::vector<uint8_t> guard_;  // guard_bytes() bytes of the pattern
  std::vector<uint64_t> bases_;
  std::vector<size_t> sizes_;
};

std::vector<std::string> kernel_names(const Answer& answer) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& l : answer.launches)
    if (seen.insert(l.kernel).second) names.push_back(l.kernel);
  return names;
}

// Launches every line of `plan` in order; the first failure stops it. A plan that stops at a
// later line still synchronizes what it launched: a GPU's executor holds the device for a job's
// kernels until synchronize() (cuda/gpu_executor.cpp), and a worker that returned without it
// would keep every other worker's timing waiting while it idles. A fault of the launched kernels
// that the wait reports came first, so it is the verdict.
ExecOutcome run_plan(Executor& ex, const Program& program, const LaunchPlan& plan,
                     const std::vector<uint64_t>& buffers, const std::vector<uint64_t>& scratch) {
  bool launched = false;
  auto stop = [&](ExecOutcome o) {
    if (!launched) return o;
    ExecOutcome waited = ex.synchronize();
    return waited.ok() ? o : waited;
  };
  for (const auto& l : plan.launches) {
    const auto* params = program.params_of(l.kernel);
    if (!params)
      return stop({Verdict::kLaunchError,
                   fmt::format("line {}: the code defines no __global__ kernel '{}' (declare it "
                               "__global__, and spell it as in the code)",
                               l.line, l.kernel)});
    auto args = marshal_args(l, *params, buffers, scratch);
    if (!args) return stop({Verdict::kLaunchError, fmt::format("line {}: {}", l.line, args.status().message())});
    ExecOutcome o = ex.launch(program, l, *args);
    if (!o.ok()) {
      o.message = fmt::format("launch of {} (line {}): {}", l.kernel, l.line, o.message);
      return o;  // the executor's failed launch has let the device go (Executor::launch)
    }
    launched = true;
  }
  return ex.synchronize();
}

struct Staged {
  LaunchPlan plan;
  std::vector<uint64_t> buffers;
  std::vector<uint64_t> scratch;
};

// Plans `answer` over `params` and places the task's buffers (`data`) and the plan's scratch.
Expected<Staged> stage(const Answer& answer, const tasks::Task& task, const tasks::Params& params,
                       const PlanLimits& limits, const BufferRefs& data, TrialBuffers& device,
                       ExecOutcome* failure) {
  Staged s;
  auto plan = make_launch_plan(answer, task, params, limits);
  if (!plan) {
    *failure = {Verdict::kLaunchError, plan.status().message()};
    return plan.status();
  }
  s.plan = std::move(*plan);
  for (const tasks::BufferData* b : data) {
    auto addr = device.add(b->bytes.data(), b->bytes.size());
    if (!addr) {
      *failure = infra("allocating buffer " + b->name, addr.status());
      return addr.status();
    }
    s.buffers.push_back(*addr);
  }
  for (const auto& sc : s.plan.scratch) {
    auto addr = device.add(nullptr, sc.bytes);
    if (!addr) {
      *failure = infra("allocating scratch " + sc.name, addr.status());
      return addr.status();
    }
    s.scratch.push_back(*addr);
  }
  return s;
}

// The staged state of every buffer a run writes (outputs poisoned, `inout` buffers' inputs,
// zeroed scratch), kept once more on the device, so that each timed run starts from it: a
// timed run must never find an earlier run's results (a kernel could return at once), nor an
// `inout` buffer an earlier run has already changed.
class StagedState {
 public:
  // `data` must outlive this object: the kept copies are checked against it.
  static Expected<StagedState> keep(TrialBuffers& device, const BufferRefs& data, const Staged& staged) {
    StagedState s;
    size_t alloc = data.size() + staged.scratch.size();  // the kept copies follow the staged buffers
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i]->role == tasks::Role::kIn) continue;
      LEAP_ASSIGN_OR_RETURN(uint64_t kept, device.add(data[i]->bytes.data(), data[i]->bytes.size()));
      s.copies_.push_back({staged.buffers[i], kept, data[i]->bytes.size(), alloc++, &data[i]->bytes,
                           data[i]->name});
    }
    for (size_t j = 0; j < staged.scratch.size(); ++j) {
      LEAP_ASSIGN_OR_RETURN(uint64_t kept, device.add(nullptr, staged.plan.scratch[j].bytes));
      s.copies_.push_back({staged.scratch[j], kept, staged.plan.scratch[j].bytes, alloc++, nullptr,
                           staged.plan.scratch[j].name});
    }
    return s;
  }
  Status restore(Executor& ex) const {
    for (const Copy& c : copies_) LEAP_RETURN_IF_ERROR(ex.copy(c.live, c.kept, c.bytes));
    return Status::ok();
  }
  // The kept copies as staged: a kernel that wrote into one (its results, so that every restore
  // hands them back) has not computed them in the runs it was timed on.
  ExecOutcome check(TrialBuffers& device) const {
    for (const Copy& c : copies_) {
      size_t first_difference = 0;
      std::string damage;
      Status st = device.compare(c.alloc, c.expected ? c.expected->data() : nullptr, &first_difference, &damage);
      if (!st) return infra("reading the staged copies back", st);
      if (!damage.empty() || first_difference != c.bytes)
        return {Verdict::kMemoryViolation,
                fmt::format("the kernel wrote into the sandbox's staged copy of buffer '{}' (outside "
                            "every buffer it was given)",
                            c.name)};
    }
    return {};
  }

 private:
  struct Copy {
    uint64_t live, kept;
    size_t bytes;
    size_t alloc;                              // its index in TrialBuffers
    const std::vector<uint8_t>* expected;      // the staged bytes; null: zeros (scratch)
    std::string name;
  };
  std::vector<Copy> copies_;
};

// Reads back the task's buffers and the scratch after a run: guard zones intact, inputs
// unchanged, and the `out`/`inout` buffers into `outs`.
ExecOutcome collect(TrialBuffers& device, const BufferRefs& data, const Staged& staged,
                    std::vector<tasks::BufferData>* outs) {
  const size_t n_alloc = data.size() + staged.scratch.size();
  for (size_t i = 0; i < n_alloc; ++i) {
    const bool is_task_buffer = i < data.size();
    const bool is_input = is_task_buffer && data[i]->role == tasks::Role::kIn;
    std::vector<uint8_t> bytes;
    size_t first_difference = 0;
    std::string damage;
    // An input is compared piece by piece, an output comes back whole, scratch only has its
    // guards checked (the kernel may leave anything in it).
    Status st = is_input         ? device.compare(i, data[i]->bytes.data(), &first_difference, &damage)
                : is_task_buffer ? device.read_back(i, &bytes, &damage)
                                 : device.check_guards(i, &damage);
    if (!st) return infra("reading results", st);
    const std::string& name = is_task_buffer ? data[i]->name : staged.plan.scratch[i - data.size()].name;
    if (!damage.empty())
      return {Verdict::kMemoryViolation,
              fmt::format("the kernel {} of buffer '{}' (guard zone overwritten)", damage, name)};
    if (!is_task_buffer) continue;
    if (is_input) {
      if (first_difference != data[i]->bytes.size()) {
        const size_t elem = first_difference / tasks::dtype_size(data[i]->dtype);
        return {Verdict::kWrongAnswer,
                fmt::format("the kernel modified input buffer '{}' (first change at element "
                            "{}); inputs are read-only: write results only to the output "
                            "buffers or scratch",
                            name, elem)};
      }
      continue;
    }
    // The buffer's description with the bytes read back (not a copy of the staged bytes first).
    tasks::BufferData out;
    out.name = data[i]->name;
    out.dtype = data[i]->dtype;
    out.role = data[i]->role;
    out.elements = data[i]->elements;
    out.bytes = std::move(bytes);
    outs->push_back(std::move(out));
  }
  return {};
}

// What a trial's inputs are a function of: the task's buffers (names, dtypes, shapes, roles and
// initialisations) and sizes, the seed and the trial. The task id only makes keys readable.
std::string input_key(const tasks::Task& task, const tasks::Params& params, const TrialSpec& t) {
  std::string key = fmt::format("{}|{}|{}", task.id, t.seed, t.trial);
  for (const auto& b : task.buffers) {
    key += fmt::format("|{}:{}:{}:{}", b.name, tasks::dtype_name(b.dtype), static_cast<int>(b.role),
                       tasks::init_name(b.init));
    for (const auto& d : b.shape) key += "," + d;
  }
  for (const auto& [name, value] : params)
    key += "|" + name + "=" + std::visit([](auto v) { return fmt::format("{}", v); }, value);
  return key;
}

}  // namespace

Expected<std::shared_ptr<const std::vector<tasks::BufferData>>> JobRunner::trial_inputs(
    const tasks::Task& task, const TrialSpec& trial) {
  const tasks::Params& params = tasks::params_for(task, trial.sizes);
  const std::string key = input_key(task, params, trial);
  if (auto hit = inputs_.find(key)) return *hit;
  LEAP_ASSIGN_OR_RETURN(std::vector<tasks::BufferData> generated,
                        tasks::generate_inputs(task, params, trial.seed, trial.trial, input_threads_));
  size_t bytes = key.size();
  for (auto& b : generated) {
    if (b.role == tasks::Role::kOut) std::vector<uint8_t>().swap(b.bytes);
    bytes += b.bytes.size();
  }
  auto shared = std::make_shared<const std::vector<tasks::BufferData>>(std::move(generated));
  inputs_.insert(key, shared, bytes);
  return shared;
}

JobReport JobRunner::run(const JobRequest& req) {
  JobReport report;
  auto fail = [&](ExecOutcome o, int trial) {
    report.outcome = std::move(o);
    report.failed_trial = trial;
    report.outputs.clear();
    return report;
  };
  auto answer = parse_answer_code(req.code);
  if (!answer) return fail({Verdict::kFormatError, answer.status().message()}, -1);

  CompileOutcome compiled = executor_.compile(answer->source, kernel_names(*answer));
  report.compile_ms = compiled.compile_ms;
  report.compile_cache_hit = compiled.cache_hit;
  if (on_compiled_) on_compiled_();
  if (!compiled.outcome.ok()) return fail(compiled.outcome, -1);
  // Half the run timeout for waits on the device, so that a wait behind another job's hung
  // kernel ends as a retried SANDBOX_ERROR with time to spare, never as this candidate's TIMEOUT.
  executor_.set_deadline(run_timeout_s_ > 0 ? std::chrono::steady_clock::now() +
                                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                      std::chrono::duration<double>(run_timeout_s_ / 2))
                                            : std::chrono::steady_clock::time_point::max());

  for (size_t t = 0; t < req.trials.size(); ++t) {
    const TrialSpec& spec = req.trials[t];
    const tasks::Params& params = tasks::params_for(req.task, spec.sizes);
    auto inputs = trial_inputs(req.task, spec);
    if (!inputs) return fail(infra("generating inputs", inputs.status()), static_cast<int>(t));
    // The inputs as cached (never copied: they stay as generated), the outputs poisoned here
    // (cached without bytes).
    std::vector<tasks::BufferData> poisoned;
    poisoned.reserve((*inputs)->size());  // `data` points into it
    BufferRefs data;
    for (const tasks::BufferData& b : **inputs) {
      if (b.role != tasks::Role::kOut) {
        data.push_back(&b);
        continue;
      }
      poisoned.push_back(b);
      tasks::fill_poison(poisoned.back());
      data.push_back(&poisoned.back());
    }

    TrialBuffers device(executor_);
    ExecOutcome failure;
    auto staged = stage(*answer, req.task, params, req.limits, data, device, &failure);
    if (!staged) return fail(failure, static_cast<int>(t));

    auto t0 = std::chrono::steady_clock::now();
    ExecOutcome ran =
        run_plan(executor_, *compiled.program, staged->plan, staged->buffers, staged->scratch);
    report.exec_ms += ms_since(t0);
    if (!ran.ok()) return fail(ran, static_cast<int>(t));

    std::vector<tasks::BufferData> outs;
    ExecOutcome read = collect(device, data, *staged, &outs);
    if (!read.ok()) return fail(read, static_cast<int>(t));
    report.outputs.push_back(std::move(outs));

    if (req.time && t == 0 && executor_.can_time()) {
      auto kept = StagedState::keep(device, data, *staged);
      if (!kept) return fail(infra("keeping the staged buffers for timing", kept.status()), 0);
      // One of the first min_launches timed runs, chosen here where no kernel can predict it, is
      // read back before the next run's restore (or after the last run): its results must be as
      // right as the checked run's. A kernel that computes only on some launches (a __device__
      // counter, results kept in a __device__ array) would otherwise be timed doing nothing.
      uint64_t pick_state = static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
      const int sampled = timing_.warmups +
                          static_cast<int>(Rng::splitmix64(&pick_state) %
                                           static_cast<uint64_t>(std::max(1, timing_.min_launches)));
      int runs_done = 0;
      bool read_sampled = false;
      ExecOutcome sampled_outcome;
      std::vector<tasks::BufferData> sampled_outs;
      auto read_back_sampled = [&] {
        sampled_outcome = collect(device, data, *staged, &sampled_outs);
        read_sampled = true;
      };
      Timing cand;
      ExecOutcome timed = executor_.time(
          [&] {
            return run_plan(executor_, *compiled.program, staged->plan, staged->buffers,
                            staged->scratch);
          },
          [&] {
            if (runs_done++ == sampled + 1) read_back_sampled();
            return kept->restore(executor_);
          },
          timing_, &cand);
      if (!timed.ok()) return fail(timed, 0);
      // The last run is read back too, whichever was sampled: a kernel that computes on the first
      // runs only (a counter past the warm-ups and the sampled window) would otherwise be timed
      // doing nothing for most of the runs, which the median then reports. How many runs there
      // are depends on the clock, so no kernel can tell which is the last.
      std::vector<tasks::BufferData> last_outs;
      ExecOutcome last_outcome;
      if (!read_sampled) read_back_sampled();  // the sampled run was the last one
      else last_outcome = collect(device, data, *staged, &last_outs);
      for (ExecOutcome* o : {&sampled_outcome, &last_outcome}) {
        if (o->ok()) continue;
        o->message = "in a timed run: " + o->message;
        return fail(*o, 0);
      }
      if (ExecOutcome intact = kept->check(device); !intact.ok()) return fail(intact, 0);
      // Both runs are within the task's tolerance of the reference, so within twice it of each
      // other: an honest kernel whose sums run in another order each launch still passes.
      tasks::Task twice = req.task;
      twice.atol *= 2;
      twice.rtol *= 2;
      Comparison same = compare_outputs(twice, params, sampled_outs, report.outputs[0]);
      if (same.ok && !last_outs.empty()) same = compare_outputs(twice, params, last_outs, report.outputs[0]);
      if (!same.ok)
        return fail({Verdict::kWrongAnswer,
                     "the results of a timed run differ from the first run's (each launch must "
                     "compute its results from the inputs alone): " +
                         same.message},
                    0);
      report.candidate_ms = cand.median_ms;
      const std::string key = req.task.id + (spec.sizes == tasks::SizeSet::kGpu ? "|gpu" : "|cpu");
      if (!reference_ms_.count(key)) {
        ExecOutcome ref = time_reference(req, params, data, key);
        if (!ref.ok()) return fail(ref, 0);
      }
      report.reference_ms = reference_ms_[key];
    }
  }
  return report;
}

ExecOutcome JobRunner::time_reference(const JobRequest& req, const tasks::Params& params,
                                      const BufferRefs& data,
                                      const std::string& key) {
  auto code = extract_code_block(req.task.reference);
  if (!code) return infra("the task's reference", code.status());
  auto answer = parse_answer_code(*code);
  if (!answer) return infra("the task's reference", answer.status());
  CompileOutcome compiled = executor_.compile(answer->source, kernel_names(*answer));
  if (!compiled.outcome.ok())
    return {Verdict::kSandboxError,
            "the task's reference does not compile: " + compiled.outcome.message};
  TrialBuffers device(executor_);
  ExecOutcome failure;
  auto staged = stage(*answer, req.task, params, req.limits, data, device, &failure);
  if (!staged) return {Verdict::kSandboxError, "the task's reference: " + failure.message};
  auto kept = StagedState::keep(device, data, *staged);
  if (!kept) return infra("keeping the reference's staged buffers", kept.status());
  Timing timing;
  ExecOutcome timed = executor_.time(
      [&] {
        return run_plan(executor_, *compiled.program, staged->plan, staged->buffers,
                        staged->scratch);
      },
      [&] { return kept->restore(executor_); }, timing_, &timing);
  if (!timed.ok()) return {Verdict::kSandboxError, "timing the task's reference: " + timed.message};
  reference_ms_[key] = timing.median_ms;
  return {};
}

}  // namespace leap::sandbox
