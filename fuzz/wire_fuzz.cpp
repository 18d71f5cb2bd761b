// Fuzz target: the worker protocol as the supervisor and a worker read it (sandbox/wire.h). The
// input is a byte stream on the channel: frames are read from a pipe holding it (then closed,
// as when the peer dies mid-frame) and each payload goes to its decoder. A payload that decodes
// must encode and decode again: the two sides of the codec agree on every accepted message.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sandbox/wire.h"

namespace {

namespace wire = leap::sandbox::wire;

void decode_payload(const wire::Frame& frame) {
  if (frame.type == wire::FrameType::kRequest) {
    auto request = wire::decode_request(frame.payload);
    if (request && !wire::decode_request(wire::encode_request(*request))) std::abort();
  } else if (frame.type == wire::FrameType::kReport) {
    auto report = wire::decode_report(frame.payload);
    if (report && !wire::decode_report(wire::encode_report(*report))) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A pipe holds 64 KiB without a reader; larger inputs go to the decoders directly.
  constexpr size_t kPipeBytes = 60 * 1024;
  if (size > kPipeBytes) {
    for (auto type : {wire::FrameType::kRequest, wire::FrameType::kReport})
      decode_payload({type, std::string(reinterpret_cast<const char*>(data), size)});
    return 0;
  }
  int fds[2];
  if (::pipe(fds) != 0) return 0;
  if (size > 0 && ::write(fds[1], data, size) != static_cast<ssize_t>(size)) std::abort();
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto frame = wire::read_frame(fds[0], deadline);
    if (!frame) break;
    decode_payload(*frame);
  }
  ::close(fds[0]);
  return 0;
}
