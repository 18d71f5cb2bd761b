// The worker protocol: length-prefixed frames over a Unix socket pair between the supervisor
// and a worker process. A frame is [u32 payload length, little-endian][u8 type][payload].
// Payloads are a flat binary encoding of JobRequest / JobReport (fixed-width little-endian
// integers, doubles as their bits, strings and byte arrays with u64 lengths). A decoder never
// trusts a length: every read is bounds-checked and a short or oversized frame is an error
// (a dying worker must not take the supervisor with it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "sandbox/job.h"

namespace leap::sandbox::wire {

enum class FrameType : uint8_t {
  kReady = 1,     // worker -> supervisor, once started (payload: device name)
  kRequest = 2,   // supervisor -> worker: a JobRequest
  kCompiled = 3,  // worker -> supervisor: compilation done, the run timeout starts
  kReport = 4,    // worker -> supervisor: the JobReport
};

inline constexpr uint32_t kMaxFrameBytes = 1u << 30;

struct Frame {
  FrameType type = FrameType::kReady;
  std::string payload;
};

std::string encode_request(const JobRequest& request);
Expected<JobRequest> decode_request(std::string_view payload);
std::string encode_report(const JobReport& report);
Expected<JobReport> decode_report(std::string_view payload);

// Writes a whole frame (retrying short writes, no SIGPIPE). io_error when the peer is gone.
Status write_frame(int fd, FrameType type, std::string_view payload);
// Reads one frame, waiting at most until `deadline`. not_found on end of file (the peer
// exited), unsupported ("timeout") when the deadline passes, io_error on a broken frame.
Expected<Frame> read_frame(int fd, std::chrono::steady_clock::time_point deadline);
// True when `st` came from read_frame's deadline passing.
bool is_timeout(const Status& st);

}  // namespace leap::sandbox::wire
