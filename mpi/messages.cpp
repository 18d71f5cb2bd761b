// Encoding of every message type, and the blocking send/recv built on MPI_Probe.
#include "mpi/messages.h"

#include <chrono>
#include <thread>

#include "common/check.h"
#include "mpi/wire.h"

namespace leap::mpi {

namespace {

// Each message type lists its fields once, in order; the same function writes and reads.
template <class IO> void fields(IO& io, Control& m) { io(m.kind, m.step, m.turn); }
template <class IO> void fields(IO& io, RolloutItem& m) { io(m.uid, m.task, m.prompt_ids, m.seed); }
template <class IO> void fields(IO& io, RolloutWork& m) { io(m.items, m.train); }
template <class IO> void fields(IO& io, Completion& m) {
  io(m.uid, m.text, m.prompt_tokens, m.completion_tokens, m.logprobs, m.kv_reused_tokens);
}
template <class IO> void fields(IO& io, RolloutResult& m) { io(m.completions, m.want, m.busy_s, m.trained); }
template <class IO> void fields(IO& io, SandboxJob& m) { io(m.uid, m.task, m.answer); }
template <class IO> void fields(IO& io, SandboxJobs& m) { io(m.jobs); }
template <class IO> void fields(IO& io, SandboxOutcome& m) {
  io(m.uid, m.verdict, m.max_abs_err, m.compile_ms, m.exec_ms, m.speedup, m.feedback, m.slot_ms, m.reference_ran);
}
template <class IO> void fields(IO& io, SandboxResults& m) { io(m.results, m.free_slots); }
template <class IO> void fields(IO& io, TrainSample& m) {
  io(m.tokens, m.prompt_len, m.old_logprobs, m.advantage, m.mini_batch, m.span_start, m.span_len,
     m.span_advantage);
}
template <class IO> void fields(IO& io, TrainWork& m) {
  io(m.samples, m.mini_batches, m.ppo_epochs, m.deferred_norm);
}
template <class IO> void fields(IO& io, TrainReport& m) {
  io(m.loss, m.tokens, m.clipped, m.ratio_sum, m.ratio_max, m.kl_sum, m.neg_logp_sum, m.grad_norm, m.lr, m.busy_s,
     m.early_s, m.early_sequences);
}
template <class IO> void fields(IO& io, ErrorReport& m) { io(m.rank, m.message); }

template <class T> constexpr Tag tag_of();
template <> constexpr Tag tag_of<Control>() { return Tag::kControl; }
template <> constexpr Tag tag_of<RolloutWork>() { return Tag::kRolloutWork; }
template <> constexpr Tag tag_of<RolloutResult>() { return Tag::kRolloutResult; }
template <> constexpr Tag tag_of<SandboxJobs>() { return Tag::kSandboxJobs; }
template <> constexpr Tag tag_of<SandboxResults>() { return Tag::kSandboxResults; }
template <> constexpr Tag tag_of<TrainWork>() { return Tag::kTrainWork; }
template <> constexpr Tag tag_of<TrainReport>() { return Tag::kTrainReport; }
template <> constexpr Tag tag_of<ErrorReport>() { return Tag::kError; }


struct Writer {
  WireWriter w;
  template <class... A> void operator()(A&... a) { (put(a), ...); }
  template <class T> void put(T& v) {
    if constexpr (std::is_enum_v<T>) w.put(static_cast<int32_t>(v));
    else if constexpr (std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>) w.put(v);
    else if constexpr (requires { v.size(); v.data(); }) {  // vectors
      using E = typename T::value_type;
      if constexpr (std::is_trivially_copyable_v<E> || std::is_same_v<E, std::string>) {
        w.put(v);
      } else {
        w.put<uint64_t>(v.size());
        for (auto& x : v) fields(*this, x);
      }
    }
  }
};

struct Reader {
  WireReader r;
  template <class... A> void operator()(A&... a) { (get(a), ...); }
  template <class T> void get(T& v) {
    if constexpr (std::is_enum_v<T>) {
      int32_t x = 0;
      r.get(x);
      v = static_cast<T>(x);
    } else if constexpr (std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>) {
      r.get(v);
    } else if constexpr (requires { v.size(); v.data(); }) {
      using E = typename T::value_type;
      if constexpr (std::is_trivially_copyable_v<E> || std::is_same_v<E, std::string>) {
        r.get(v);
      } else {
        uint64_t n = 0;
        r.get(n);
        // Every element takes at least one byte: a larger count is a corrupt length prefix.
        if (!r.ok() || n > r.remaining()) return r.fail();
        v.resize(n);
        for (auto& x : v) fields(*this, x);
      }
    }
  }
};

}  // namespace

template <class T>
std::vector<uint8_t> encode(const T& msg) {
  Writer w;
  T copy = msg;  // fields() takes non-const references so one list serves both directions
  fields(w, copy);
  return std::move(w.w.bytes());
}

template <class T>
Expected<T> decode(const std::vector<uint8_t>& bytes) {
  Reader rd{WireReader(bytes.data(), bytes.size())};
  T msg{};
  fields(rd, msg);
  if (!rd.r.done()) return internal_error("corrupt or truncated MPI message (" + std::to_string(bytes.size()) + " bytes)");
  return msg;
}

template <class T>
void send(const T& msg, int dest, MPI_Comm comm) {
  auto bytes = encode(msg);
  LEAP_CHECK(bytes.size() < (1ull << 31), "message too large for one MPI_Send: " << bytes.size() << " bytes");
  MPI_CHECK(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, static_cast<int>(tag_of<T>()), comm));
}

template <class T>
Expected<T> recv(int source, MPI_Comm comm, int* from) {
  // World rank 0 waits by polling rather than MPI_Probe, so that it notices another rank's fatal
  // error (common/check.h) instead of waiting for a message that will never come. Other ranks
  // are never sent such reports, so they block in MPI_Probe and spend nothing while they wait.
  MPI_Status st;
  int world_rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  if (world_rank != 0) {
    MPI_CHECK(MPI_Probe(source, static_cast<int>(tag_of<T>()), comm, &st));
  } else {
    for (int polls = 0;; ++polls) {
      int ready = 0;
      MPI_CHECK(MPI_Iprobe(source, static_cast<int>(tag_of<T>()), comm, &ready, &st));
      if (ready) break;
      poll_fatal_reports();
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  int count = 0;
  MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  MPI_CHECK(MPI_Recv(bytes.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, comm, MPI_STATUS_IGNORE));
  if (from) *from = st.MPI_SOURCE;
  return decode<T>(bytes);
}

template <class T>
void Outbox::send(const T& msg, int dest, MPI_Comm comm) {
  Pending& p = pending_.emplace_back();
  p.bytes = encode(msg);
  LEAP_CHECK(p.bytes.size() < (1ull << 31), "message too large for one MPI_Isend: " << p.bytes.size() << " bytes");
  MPI_CHECK(MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, dest,
                      static_cast<int>(tag_of<T>()), comm, &p.request));
}

void Outbox::progress() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_CHECK(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
    it = done ? pending_.erase(it) : std::next(it);
  }
}

void Outbox::flush() {
  for (auto& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  pending_.clear();
}

template <class T>
std::optional<Expected<T>> try_recv(int source, MPI_Comm comm, int* from) {
  int ready = 0;
  MPI_Status st;
  MPI_CHECK(MPI_Iprobe(source, static_cast<int>(tag_of<T>()), comm, &ready, &st));
  if (!ready) return std::nullopt;
  return recv<T>(st.MPI_SOURCE, comm, from);
}

template <class T>
void broadcast(T& msg, int root, MPI_Comm comm) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::vector<uint8_t> bytes;
  if (rank == root) bytes = encode(msg);
  uint64_t n = bytes.size();
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm));
  LEAP_CHECK(n < (1ull << 31), "broadcast message too large: " << n << " bytes");
  bytes.resize(n);
  MPI_CHECK(MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, root, comm));
  if (rank != root) {
    auto decoded = decode<T>(bytes);
    LEAP_CHECK(decoded.has_value(), decoded.status().message());
    msg = std::move(decoded).value();
  }
}

#define LEAP_MESSAGE(T)                                                    \
  template std::vector<uint8_t> encode<T>(const T&);                       \
  template Expected<T> decode<T>(const std::vector<uint8_t>&);             \
  template void send<T>(const T&, int, MPI_Comm);                          \
  template Expected<T> recv<T>(int, MPI_Comm, int*);                       \
  template std::optional<Expected<T>> try_recv<T>(int, MPI_Comm, int*);    \
  template void Outbox::send<T>(const T&, int, MPI_Comm);                  \
  template void broadcast<T>(T&, int, MPI_Comm);
LEAP_MESSAGE(Control)
LEAP_MESSAGE(RolloutWork)
LEAP_MESSAGE(RolloutResult)
LEAP_MESSAGE(SandboxJobs)
LEAP_MESSAGE(SandboxResults)
LEAP_MESSAGE(TrainWork)
LEAP_MESSAGE(TrainReport)
LEAP_MESSAGE(ErrorReport)
#undef LEAP_MESSAGE

}  // namespace leap::mpi
