// Argument layout from PTX parameter types (.u64/.s32/.f32/...). Struct parameters (.b8 arrays)
// cannot be built from a launch line and are refused.
#include "sandbox/marshal.h"

#include <fmt/format.h>

#include <cstring>

namespace leap::sandbox {

namespace {

template <class T>
std::vector<uint8_t> bytes_of(T v) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

// ".s32" -> ('s', 32); false for types that are not scalars.
bool scalar_kind(const ptx::ParamInfo& p, char* kind, int* bits) {
  if (p.type.size() < 3 || p.type[0] != '.') return false;
  *kind = p.type[1];
  if (*kind != 's' && *kind != 'u' && *kind != 'b' && *kind != 'f') return false;
  *bits = std::atoi(p.type.c_str() + 2);
  bool array = p.size * 8 != static_cast<size_t>(*bits);
  return !array && (*bits == 8 || *bits == 16 || *bits == 32 || *bits == 64);
}

Expected<std::vector<uint8_t>> encode_int(int64_t v, char kind, int bits) {
  if (kind == 'f')
    return bits == 32 ? bytes_of(static_cast<float>(v)) : bytes_of(static_cast<double>(v));
  if (bits == 64) return bytes_of(v);
  const int64_t lo = -(int64_t{1} << (bits - 1));
  const int64_t hi = kind == 's' ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  // .b and .u accept negative values that fit the signed range too: `unsigned` parameters
  // receiving -1 is C's conversion, and a 32-bit int is often declared .u32 by NVRTC.
  if (v < lo || v > hi)
    return invalid_input(fmt::format("value {} does not fit the parameter's {}-bit type", v, bits));
  if (bits == 32) return bytes_of(static_cast<uint32_t>(v));
  if (bits == 16) return bytes_of(static_cast<uint16_t>(v));
  return bytes_of(static_cast<uint8_t>(v));
}

}  // namespace

Expected<std::vector<std::vector<uint8_t>>> marshal_args(
    const PlannedLaunch& launch, const std::vector<ptx::ParamInfo>& params,
    const std::vector<uint64_t>& buffer_addresses, const std::vector<uint64_t>& scratch_addresses) {
  if (launch.args.size() != params.size())
    return invalid_input(fmt::format("kernel {} takes {} parameters but the launch line passes {}",
                                     launch.kernel, params.size(), launch.args.size()));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const PlanArg& arg = launch.args[i];
    const ptx::ParamInfo& p = params[i];
    auto ctx = fmt::format("argument {} '{}' of {}", i + 1, arg.text, launch.kernel);
    char kind = 0;
    int bits = 0;
    if (!scalar_kind(p, &kind, &bits))
      return invalid_input(
          fmt::format("{}: parameter {} is a {}-byte aggregate; launch lines pass "
                      "only pointers and scalars",
                      ctx, i + 1, p.size));
    switch (arg.kind) {
      case PlanArg::Kind::kBuffer:
      case PlanArg::Kind::kScratch: {
        if (bits != 64 || kind == 'f')
          return invalid_input(
              fmt::format("{}: a buffer is passed where the kernel declares a "
                          "{} ({}-bit) parameter, not a pointer",
                          ctx, p.type, bits));
        uint64_t addr = arg.kind == PlanArg::Kind::kBuffer ? buffer_addresses.at(arg.index)
                                                           : scratch_addresses.at(arg.index);
        out.push_back(bytes_of(addr));
        break;
      }
      case PlanArg::Kind::kFloat:
        if (kind != 'f')
          return invalid_input(
              fmt::format("{}: a float is passed where the kernel declares an "
                          "integer or pointer parameter ({})",
                          ctx, p.type));
        if (bits == 32)
          out.push_back(bytes_of(static_cast<float>(arg.float_value)));
        else if (bits == 64)
          out.push_back(bytes_of(arg.float_value));
        else
          return invalid_input(
              fmt::format("{}: {}-bit float parameters are not supported", ctx, bits));
        break;
      case PlanArg::Kind::kInt: {
        if (kind == 'f' && bits == 16)
          return invalid_input(fmt::format("{}: 16-bit float parameters are not supported", ctx));
        auto bytes = encode_int(arg.int_value, kind, bits);
        if (!bytes) return bytes.status().with_context(ctx);
        out.push_back(std::move(*bytes));
        break;
      }
    }
  }
  return out;
}

}  // namespace leap::sandbox
