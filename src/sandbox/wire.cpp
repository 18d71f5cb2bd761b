// Frame I/O and the JobRequest/JobReport codec. The encoder and decoder of each message are
// written side by side with one field list each, in the same order, so they cannot drift apart
// unnoticed (test_workers round-trips both).
#include "sandbox/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace leap::sandbox::wire {

namespace {

class Writer {
 public:
  template <class T>
  void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(std::string_view s) {
    pod<uint64_t>(s.size());
    out_.append(s.data(), s.size());
  }
  void bytes(const std::vector<uint8_t>& b) {
    pod<uint64_t>(b.size());
    out_.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  T pod() {
    T v{};
    if (!take(sizeof(T))) return v;
    std::memcpy(&v, in_.data() + pos_ - sizeof(T), sizeof(T));
    return v;
  }
  std::string str() {
    uint64_t n = pod<uint64_t>();
    if (!take(n)) return {};
    return std::string(in_.substr(pos_ - n, n));
  }
  std::vector<uint8_t> bytes() {
    uint64_t n = pod<uint64_t>();
    if (!take(n)) return {};
    const auto* p = reinterpret_cast<const uint8_t*>(in_.data() + pos_ - n);
    return std::vector<uint8_t>(p, p + n);
  }
  // A count of items each taking at least `min_item_bytes`: bounded by what is left, so a
  // corrupt count cannot make the decoder allocate without limit.
  uint64_t count(size_t min_item_bytes) {
    uint64_t n = pod<uint64_t>();
    if (n > (in_.size() - pos_) / std::max<size_t>(min_item_bytes, 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  Status finish(const char* what) const {
    if (!ok_ || pos_ != in_.size()) return io_error(std::string("malformed ") + what + " frame");
    return Status::ok();
  }

 private:
  bool take(uint64_t n) {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return false;
    }
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void put_params(Writer& w, const tasks::Params& params) {
  w.pod<uint64_t>(params.size());
  for (const auto& [k, v] : params) {
    w.str(k);
    w.pod<uint8_t>(static_cast<uint8_t>(v.index()));
    if (std::holds_alternative<int64_t>(v))
      w.pod(std::get<int64_t>(v));
    else
      w.pod(std::get<double>(v));
  }
}

tasks::Params get_params(Reader& r) {
  tasks::Params params;
  for (uint64_t n = r.count(17); n-- > 0;) {
    std::string k = r.str();
    if (r.pod<uint8_t>() == 0)
      params[k] = r.pod<int64_t>();
    else
      params[k] = r.pod<double>();
  }
  return params;
}

void put_task(Writer& w, const tasks::Task& t) {
  // The prompt stays behind: a worker runs code, it never needs the prose.
  w.str(t.id);
  w.pod<int32_t>(t.level);
  w.str(t.family);
  put_params(w, t.params);
  put_params(w, t.cpu_params);
  w.pod<uint64_t>(t.buffers.size());
  for (const auto& b : t.buffers) {
    w.str(b.name);
    w.pod<uint8_t>(static_cast<uint8_t>(b.dtype));
    w.pod<uint64_t>(b.shape.size());
    for (const auto& d : b.shape) w.str(d);
    w.pod<uint8_t>(static_cast<uint8_t>(b.role));
    w.pod<uint8_t>(static_cast<uint8_t>(b.init.kind));
    w.pod(b.init.a);
    w.pod(b.init.b);
  }
  w.str(t.reference);
  w.pod(t.atol);
  w.pod(t.rtol);
  w.pod<uint8_t>(static_cast<uint8_t>(t.split));
}

tasks::Task get_task(Reader& r) {
  tasks::Task t;
  t.id = r.str();
  t.level = r.pod<int32_t>();
  t.family = r.str();
  t.params = get_params(r);
  t.cpu_params = get_params(r);
  for (uint64_t n = r.count(36); n-- > 0;) {
    tasks::BufferSpec b;
    b.name = r.str();
    b.dtype = static_cast<tasks::DType>(r.pod<uint8_t>());
    for (uint64_t d = r.count(8); d-- > 0;) b.shape.push_back(r.str());
    b.role = static_cast<tasks::Role>(r.pod<uint8_t>());
    b.init.kind = static_cast<tasks::Init::Kind>(r.pod<uint8_t>());
    b.init.a = r.pod<double>();
    b.init.b = r.pod<double>();
    t.buffers.push_back(std::move(b));
  }
  t.reference = r.str();
  t.atol = r.pod<double>();
  t.rtol = r.pod<double>();
  t.split = static_cast<tasks::Split>(r.pod<uint8_t>());
  return t;
}

void put_buffer(Writer& w, const tasks::BufferData& b) {
  w.str(b.name);
  w.pod<uint8_t>(static_cast<uint8_t>(b.dtype));
  w.pod<uint8_t>(static_cast<uint8_t>(b.role));
  w.pod(b.elements);
  w.bytes(b.bytes);
}

tasks::BufferData get_buffer(Reader& r) {
  tasks::BufferData b;
  b.name = r.str();
  b.dtype = static_cast<tasks::DType>(r.pod<uint8_t>());
  b.role = static_cast<tasks::Role>(r.pod<uint8_t>());
  b.elements = r.pod<int64_t>();
  b.bytes = r.bytes();
  return b;
}

void put_optional(Writer& w, const std::optional<double>& v) {
  w.pod<uint8_t>(v.has_value());
  w.pod(v.value_or(0.0));
}

std::optional<double> get_optional(Reader& r) {
  bool has = r.pod<uint8_t>() != 0;
  double v = r.pod<double>();
  return has ? std::optional<double>(v) : std::nullopt;
}

}  // namespace

std::string encode_request(const JobRequest& q) {
  Writer w;
  w.pod(q.id);
  put_task(w, q.task);
  w.str(q.code);
  w.pod<uint64_t>(q.trials.size());
  for (const auto& t : q.trials) {
    w.pod(t.seed);
    w.pod(t.trial);
    w.pod<uint8_t>(static_cast<uint8_t>(t.sizes));
  }
  w.pod(q.limits);
  w.pod<uint8_t>(q.time);
  return w.take();
}

Expected<JobRequest> decode_request(std::string_view payload) {
  Reader r(payload);
  JobRequest q;
  q.id = r.pod<uint64_t>();
  q.task = get_task(r);
  q.code = r.str();
  for (uint64_t n = r.count(17); n-- > 0;) {
    TrialSpec t;
    t.seed = r.pod<uint64_t>();
    t.trial = r.pod<uint64_t>();
    t.sizes = static_cast<tasks::SizeSet>(r.pod<uint8_t>());
    q.trials.push_back(t);
  }
  q.limits = r.pod<PlanLimits>();
  q.time = r.pod<uint8_t>() != 0;
  LEAP_RETURN_IF_ERROR(r.finish("request"));
  return q;
}

std::string encode_report(const JobReport& p) {
  Writer w;
  w.pod<int32_t>(static_cast<int32_t>(p.outcome.verdict));
  w.str(p.outcome.message);
  w.pod<int32_t>(p.failed_trial);
  w.pod(p.compile_ms);
  w.pod(p.exec_ms);
  w.pod<uint8_t>(p.compile_cache_hit);
  w.pod<uint64_t>(p.outputs.size());
  for (const auto& trial : p.outputs) {
    w.pod<uint64_t>(trial.size());
    for (const auto& b : trial) put_buffer(w, b);
  }
  put_optional(w, p.candidate_ms);
  put_optional(w, p.reference_ms);
  w.pod<uint8_t>(p.worker_exiting);
  return w.take();
}

Expected<JobReport> decode_report(std::string_view payload) {
  Reader r(payload);
  JobReport p;
  int32_t v = r.pod<int32_t>();
  if (v < 0 || v >= kVerdictCount) return io_error("malformed report frame: verdict out of range");
  p.outcome.verdict = static_cast<Verdict>(v);
  p.outcome.message = r.str();
  p.failed_trial = r.pod<int32_t>();
  p.compile_ms = r.pod<double>();
  p.exec_ms = r.pod<double>();
  p.compile_cache_hit = r.pod<uint8_t>() != 0;
  for (uint64_t n = r.count(8); n-- > 0;) {
    std::vector<tasks::BufferData> trial;
    for (uint64_t k = r.count(34); k-- > 0;) trial.push_back(get_buffer(r));
    p.outputs.push_back(std::move(trial));
  }
  p.candidate_ms = get_optional(r);
  p.reference_ms = get_optional(r);
  p.worker_exiting = r.pod<uint8_t>() != 0;
  LEAP_RETURN_IF_ERROR(r.finish("report"));
  return p;
}

Status write_frame(int fd, FrameType type, std::string_view payload) {
  if (payload.size() > kMaxFrameBytes) return io_error("frame too large");
  char header[5];
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::memcpy(header, &len, 4);
  header[4] = static_cast<char>(type);
  for (std::string_view part : {std::string_view(header, 5), payload}) {
    while (!part.empty()) {
      ssize_t n = ::send(fd, part.data(), part.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return io_error(std::string("worker channel write failed: ") + std::strerror(errno));
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return Status::ok();
}

namespace {

// Reads exactly `n` bytes into `out` before `deadline`.
Status read_exact(int fd, char* out, size_t n, std::chrono::steady_clock::time_point deadline,
                  bool at_frame_start) {
  size_t got = 0;
  while (got < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return unsupported("timeout");
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return io_error(std::string("poll: ") + std::strerror(errno));
    if (rc == 0) continue;
    ssize_t k = ::read(fd, out + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == ECONNRESET) k = 0;
    if (k < 0) return io_error(std::string("worker channel read failed: ") + std::strerror(errno));
    if (k == 0)
      return got == 0 && at_frame_start ? not_found("worker exited")
                                        : io_error("worker channel closed mid-frame");
    got += static_cast<size_t>(k);
  }
  return Status::ok();
}

}  // namespace

Expected<Frame> read_frame(int fd, std::chrono::steady_clock::time_point deadline) {
  char header[5];
  LEAP_RETURN_IF_ERROR(read_exact(fd, header, 5, deadline, true));
  uint32_t len = 0;
  std::memcpy(&len, header, 4);
  const auto type = static_cast<uint8_t>(header[4]);
  if (len > kMaxFrameBytes || type < 1 || type > 4) return io_error("malformed frame header");
  Frame f;
  f.type = static_cast<FrameType>(type);
  // The payload grows as its bytes arrive, at most 1 MiB ahead of them: a broken header that
  // claims up to kMaxFrameBytes must not make the supervisor allocate and zero a gigabyte
  // before one byte of it has come (found by fuzz/wire_fuzz.cpp, 1.3 GB of RSS).
  constexpr size_t kChunkBytes = size_t{1} << 20;
  while (f.payload.size() < len) {
    const size_t got = f.payload.size();
    const size_t n = std::min<size_t>(kChunkBytes, len - got);
    f.payload.resize(got + n);
    LEAP_RETURN_IF_ERROR(read_exact(fd, f.payload.data() + got, n, deadline, false));
  }
  return f;
}

bool is_timeout(const Status& st) {
  return st.code() == StatusCode::kUnsupported && st.message() == "timeout";
}

}  // namespace leap::sandbox::wire
