// The worker protocol: JobRequest/JobReport survive a round trip field by field, frames cross a
// socket pair whole, a deadline turns into a timeout, a closed peer into "exited", and corrupt
// frames are errors rather than crashes or huge allocations.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "sandbox/wire.h"

namespace leap::sandbox {
namespace {

using namespace std::chrono_literals;

JobRequest sample_request() {
  JobRequest q;
  q.id = 42;
  q.task.id = "L1/x";
  q.task.level = 2;
  q.task.params = {{"n", int64_t{7}}, {"alpha", 0.25}};
  q.task.cpu_params = {{"n", int64_t{3}}, {"alpha", 0.25}};
  q.task.buffers = {{"a",
                     tasks::DType::kBF16,
                     {"n", "2"},
                     tasks::Role::kInOut,
                     {tasks::Init::Kind::kUniform, -2, 3}}};
  q.task.reference = "```cuda\nref\n```";
  q.task.atol = 1e-3;
  q.task.rtol = 2e-3;
  q.task.split = tasks::Split::kHeldout;
  q.code = "__global__ void k() {}";
  q.trials = {{5, 0, tasks::SizeSet::kGpu}, {5, 1, tasks::SizeSet::kCpu}};
  q.limits.max_launches = 3;
  q.time = true;
  return q;
}

TEST(WorkersWire, RequestRoundTrip) {
  JobRequest q = sample_request();
  auto back = wire::decode_request(wire::encode_request(q));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->task.id, "L1/x");
  EXPECT_EQ(back->task.level, 2);
  EXPECT_EQ(back->task.params, q.task.params);
  EXPECT_EQ(back->task.cpu_params, q.task.cpu_params);
  ASSERT_EQ(back->task.buffers.size(), 1u);
  const auto& b = back->task.buffers[0];
  EXPECT_EQ(b.name, "a");
  EXPECT_EQ(b.dtype, tasks::DType::kBF16);
  EXPECT_EQ(b.shape, (std::vector<std::string>{"n", "2"}));
  EXPECT_EQ(b.role, tasks::Role::kInOut);
  EXPECT_EQ(b.init.kind, tasks::Init::Kind::kUniform);
  EXPECT_EQ(b.init.a, -2);
  EXPECT_EQ(b.init.b, 3);
  EXPECT_EQ(back->task.reference, q.task.reference);
  EXPECT_EQ(back->task.atol, 1e-3);
  EXPECT_EQ(back->task.rtol, 2e-3);
  EXPECT_EQ(back->task.split, tasks::Split::kHeldout);
  EXPECT_EQ(back->code, q.code);
  ASSERT_EQ(back->trials.size(), 2u);
  EXPECT_EQ(back->trials[1].trial, 1u);
  EXPECT_EQ(back->trials[0].sizes, tasks::SizeSet::kGpu);
  EXPECT_EQ(back->limits.max_launches, 3);
  EXPECT_TRUE(back->time);
}

TEST(WorkersWire, ReportRoundTrip) {
  JobReport p;
  p.outcome = {Verdict::kMemoryViolation, "st.global.f32 at 0x10"};
  p.failed_trial = 2;
  p.compile_ms = 12.5;
  p.exec_ms = 3.25;
  p.compile_cache_hit = true;
  tasks::BufferData out;
  out.name = "out";
  out.elements = 2;
  out.bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  p.outputs = {{out}, {}};
  p.candidate_ms = 0.5;
  p.worker_exiting = true;
  auto back = wire::decode_report(wire::encode_report(p));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->outcome.verdict, Verdict::kMemoryViolation);
  EXPECT_EQ(back->outcome.message, p.outcome.message);
  EXPECT_EQ(back->failed_trial, 2);
  EXPECT_EQ(back->compile_ms, 12.5);
  EXPECT_EQ(back->exec_ms, 3.25);
  EXPECT_TRUE(back->compile_cache_hit);
  ASSERT_EQ(back->outputs.size(), 2u);
  ASSERT_EQ(back->outputs[0].size(), 1u);
  EXPECT_EQ(back->outputs[0][0].bytes, out.bytes);
  EXPECT_EQ(back->outputs[0][0].elements, 2);
  EXPECT_TRUE(back->outputs[1].empty());
  EXPECT_EQ(back->candidate_ms, 0.5);
  EXPECT_FALSE(back->reference_ms.has_value());
  EXPECT_TRUE(back->worker_exiting);
}

TEST(WorkersWire, CorruptPayloadsAreErrors) {
  std::string good = wire::encode_report(JobReport{});
  EXPECT_FALSE(wire::decode_report(good.substr(0, good.size() - 1)).has_value());
  EXPECT_FALSE(wire::decode_report(good + "x").has_value());
  std::string huge = wire::encode_request(sample_request());
  // A count field claiming 2^60 items must not be believed.
  std::string bad = huge;
  uint64_t big = uint64_t{1} << 60;
  std::memcpy(bad.data() + 8 + 8 + 4 + 4, &big,
              8);  // after id, "L1/x" and level: the family length
  EXPECT_FALSE(wire::decode_request(bad).has_value());
}

TEST(WorkersWire, FramesTimeoutsAndEof) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string payload(1 << 20, 'z');  // larger than a socket buffer: written while read
  std::thread writer(
      [&] { ASSERT_TRUE(wire::write_frame(sv[0], wire::FrameType::kReport, payload).is_ok()); });
  auto f = wire::read_frame(sv[1], std::chrono::steady_clock::now() + 5s);
  writer.join();
  ASSERT_TRUE(f.has_value()) << f.status().message();
  EXPECT_EQ(f->type, wire::FrameType::kReport);
  EXPECT_EQ(f->payload, payload);

  auto t = wire::read_frame(sv[1], std::chrono::steady_clock::now() + 50ms);
  ASSERT_FALSE(t.has_value());
  EXPECT_TRUE(wire::is_timeout(t.status()));

  const char junk[5] = {0x10, 0, 0, 0, 99};  // type 99
  ASSERT_EQ(write(sv[0], junk, 5), 5);
  auto j = wire::read_frame(sv[1], std::chrono::steady_clock::now() + 1s);
  ASSERT_FALSE(j.has_value());
  EXPECT_FALSE(wire::is_timeout(j.status()));

  close(sv[0]);
  auto eof = wire::read_frame(sv[1], std::chrono::steady_clock::now() + 1s);
  ASSERT_FALSE(eof.has_value());
  EXPECT_EQ(eof.status().code(), StatusCode::kNotFound);
  // Writing to a peer that is gone is an error, not a SIGPIPE.
  EXPECT_FALSE(wire::write_frame(sv[1], wire::FrameType::kRequest, "x").is_ok());
  close(sv[1]);
}

}  // namespace
}  // namespace leap::sandbox
