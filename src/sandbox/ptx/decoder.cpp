// Decoder: syntax tree to Program (see decoder.h). Two passes over the module: the first lays
// out memory that later code refers to (shared variables, so the dynamic shared base is known;
// each .func's parameter areas, so call sites can copy into them); the second decodes bodies.
#include "sandbox/ptx/decoder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include "sandbox/ptx/ops.h"

namespace leap::sandbox::ptx {

// ---- opcode parsing -------------------------------------------------------------------------

Type parse_type(std::string_view s) {
  static const std::pair<std::string_view, Type> kTypes[] = {
      {".pred", Type::kPred},   {".b8", Type::kB8},     {".b16", Type::kB16},
      {".b32", Type::kB32},     {".b64", Type::kB64},   {".b128", Type::kB128},
      {".u8", Type::kU8},       {".u16", Type::kU16},   {".u32", Type::kU32},
      {".u64", Type::kU64},     {".s8", Type::kS8},     {".s16", Type::kS16},
      {".s32", Type::kS32},     {".s64", Type::kS64},   {".f16", Type::kF16},
      {".f16x2", Type::kF16x2}, {".bf16", Type::kBF16}, {".bf16x2", Type::kBF16x2},
      {".f32", Type::kF32},     {".f64", Type::kF64}};
  for (const auto& [name, t] : kTypes) {
    if (s == name) return t;
  }
  return Type::kNone;
}

int type_bits(Type t) {
  switch (t) {
    case Type::kPred:
      return 1;
    case Type::kB8:
    case Type::kU8:
    case Type::kS8:
      return 8;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16:
      return 16;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2:
      return 32;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64:
      return 64;
    case Type::kB128:
      return 128;
    case Type::kNone:
      return 0;
  }
  return 0;
}

bool OpSpec::has(std::string_view m) const {
  return std::find(mods.begin(), mods.end(), m) != mods.end();
}

OpSpec parse_opcode(std::string_view opcode) {
  OpSpec op;
  size_t dot = opcode.find('.');
  op.base = std::string(opcode.substr(0, dot));
  while (dot != std::string_view::npos) {
    size_t next = opcode.find('.', dot + 1);
    std::string_view part = opcode.substr(dot, next == std::string_view::npos ? next : next - dot);
    dot = next;
    if (Type t = parse_type(part); t != Type::kNone) {
      op.types.push_back(t);
      continue;
    }
    std::string_view w = part.substr(1);
    static const std::pair<std::string_view, Space> kSpaces[] = {
        {"global", Space::kGlobal}, {"shared", Space::kShared}, {"shared::cta", Space::kShared},
        {"local", Space::kLocal},   {"param", Space::kParam},   {"const", Space::kConst}};
    bool matched = false;
    for (const auto& [name, s] : kSpaces) {
      if (w == name) {
        op.space = s;
        op.has_space = true;
        matched = true;
      }
    }
    if (matched) {
      op.mods.emplace_back(w);  // also kept as a modifier: cvta.to.shared asks for it by name
      continue;
    }
    if (w == "v2" || w == "v4" || w == "v8") {
      op.vec = static_cast<uint32_t>(w[1] - '0');
    } else if (w == "rn" || w == "rz" || w == "rm" || w == "rp" || w == "rni" || w == "rzi" ||
               w == "rmi" || w == "rpi") {
      op.has_round = true;
      op.int_round = w.size() == 3;
      op.round = w[1] == 'n'   ? Round::kRn
                 : w[1] == 'z' ? Round::kRz
                 : w[1] == 'm' ? Round::kRm
                               : Round::kRp;
    } else if (w == "ftz") {
      op.ftz = true;
    } else if (w == "sat" || w == "satfinite") {
      op.sat = true;
    } else {
      op.mods.emplace_back(w);
    }
  }
  return op;
}

namespace {

constexpr size_t kMaxModuleDataBytes = 64u << 20;  // module .global/.const variables in all
// Functions in a module: the call-graph walks recurse once per level of a call chain, so a
// generated chain of 100,000 .funcs would overflow the worker's stack (a crash is a
// SANDBOX_ERROR, a void sample: a failure the policy could turn into no penalty).
constexpr size_t kMaxFunctions = 4096;

size_t align_up(size_t v, size_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}

size_t elem_size(const std::string& type) {
  const int bits = type_bits(parse_type(type));
  return bits <= 8 ? 1 : static_cast<size_t>(bits / 8);
}
size_t var_size(const VarDecl& d) {
  const size_t n = d.array_len > 0 ? static_cast<size_t>(d.array_len) : 1;
  return elem_size(d.type) * (d.array_len == 0 ? 0 : n);
}
size_t var_align(const VarDecl& d) {
  return d.align ? d.align : elem_size(d.type);
}

struct SpecialName {
  std::string_view name;
  SpecialReg reg;
};
constexpr SpecialName kSpecials[] = {
    {"%tid.x", SpecialReg::kTidX},
    {"%tid.y", SpecialReg::kTidY},
    {"%tid.z", SpecialReg::kTidZ},
    {"%ntid.x", SpecialReg::kNtidX},
    {"%ntid.y", SpecialReg::kNtidY},
    {"%ntid.z", SpecialReg::kNtidZ},
    {"%ctaid.x", SpecialReg::kCtaidX},
    {"%ctaid.y", SpecialReg::kCtaidY},
    {"%ctaid.z", SpecialReg::kCtaidZ},
    {"%nctaid.x", SpecialReg::kNctaidX},
    {"%nctaid.y", SpecialReg::kNctaidY},
    {"%nctaid.z", SpecialReg::kNctaidZ},
    {"%laneid", SpecialReg::kLaneId},
    {"%warpid", SpecialReg::kWarpId},
    {"%nwarpid", SpecialReg::kNwarpId},
    {"%lanemask_eq", SpecialReg::kLanemaskEq},
    {"%lanemask_lt", SpecialReg::kLanemaskLt},
    {"%lanemask_le", SpecialReg::kLanemaskLe},
    {"%lanemask_gt", SpecialReg::kLanemaskGt},
    {"%lanemask_ge", SpecialReg::kLanemaskGe},
    {"%clock", SpecialReg::kClock},
    {"%clock64", SpecialReg::kClock64},
    {"%globaltimer", SpecialReg::kClock64},
    {"%smid", SpecialReg::kSmId},
    {"%nsmid", SpecialReg::kNsmId},
    {"%gridid", SpecialReg::kGridId},
    {"%dynamic_smem_size", SpecialReg::kDynamicSmemSize},
    {"%total_smem_size", SpecialReg::kTotalSmemSize},
};

// What a name in scope denotes.
struct Binding {
  enum class Kind { kReg, kSymbol } kind = Kind::kReg;
  uint32_t slot = 0;
  int width = 0;  // register width in bits
  Symbol sym;
  bool kernel_param = false;  // kParam symbol of the entry (vs a call parameter area in local)
};

struct FuncLayout {
  std::vector<uint64_t> param_offsets;   // local offsets of a .func's params
  std::vector<uint64_t> return_offsets;  // local offsets of its return values
  std::vector<size_t> param_sizes, return_sizes;
  const Function* definition = nullptr;
  uint32_t entry_pc = 0;
  bool is_extern = false;
  size_t own_shared = 0;
  std::vector<std::string> callees;
};

struct CallFixup {
  uint32_t call_index;
  std::string callee;
  std::vector<std::pair<uint64_t, size_t>> args;     // caller-side areas (local offset, size)
  std::vector<std::pair<uint64_t, size_t>> results;  // caller-side areas
  int line;
};

class Decoder {
 public:
  explicit Decoder(const ParsedModule& m) : m_(m) {
    const_by_value_[1] = kSlotTrue;
    const_by_value_[0] = kSlotFalse;
  }

  Expected<Program> run() {
    if (m_.functions.size() > kMaxFunctions)
      return unsupported("a module of " + std::to_string(m_.functions.size()) + " functions (the interpreter allows " +
                         std::to_string(kMaxFunctions) + ")");
    LEAP_RETURN_IF_ERROR(layout_module());
    for (const Function& f : m_.functions) {
      if (f.has_body) LEAP_RETURN_IF_ERROR(decode_function(f));
    }
    LEAP_RETURN_IF_ERROR(link_calls());
    LEAP_RETURN_IF_ERROR(finish_kernels());
    p_.slot_init.resize(p_.slot_count, 0);
    for (const auto& [slot, value] : consts_) p_.slot_init[slot] = value;
    p_.slot_init[kSlotTrue] = 1;
    return std::move(p_);
  }

 private:
  // ---- pass 1: module variables, shared layout, .func parameter areas ------------------------
  Status layout_module() {
    std::vector<const VarDecl*> consts;
    for (const VarDecl& v : m_.variables) {
      if (v.space == ".global") {
        LEAP_RETURN_IF_ERROR(place_module_var(v, Space::kGlobal));
      } else if (v.space == ".const") {
        consts.push_back(&v);
      } else if (v.space == ".shared") {
        if (v.is_extern || v.array_len == 0) {
          dynamic_shared_.push_back(v.name);
        } else {
          module_syms_[v.name] = Symbol{Space::kShared, alloc_shared(v), var_size(v)};
          module_shared_ += var_size(v);
        }
      }
    }
    p_.module_const_begin = align_up(p_.module_data.size(), 256);
    p_.module_data.resize(p_.module_const_begin);
    for (const VarDecl* v : consts) LEAP_RETURN_IF_ERROR(place_module_var(*v, Space::kConst));
    // Function-scope .shared variables join the module-wide static layout, in order.
    for (const Function& f : m_.functions) {
      FuncLayout& fl = funcs_[f.name];
      // Defined twice, the launch would check its arguments against one definition and run
      // the other.
      if (f.has_body && fl.definition)
        return invalid_input("PTX: function " + f.name + " is defined twice");
      if (f.has_body) fl.definition = &f;
      fl.is_extern = !f.has_body && !fl.definition;
      for (const Statement& s : f.body) {
        if (s.kind == Statement::Kind::kDecl && s.decl.space == ".shared") {
          const uint64_t off = alloc_shared(s.decl);
          shared_decl_offsets_[&s] = off;
          fl.own_shared += var_size(s.decl);
        }
      }
    }
    p_.shared_static_bytes = shared_top_;
    dynamic_base_ = align_up(shared_top_, 16);
    for (const std::string& name : dynamic_shared_) {
      module_syms_[name] = Symbol{Space::kShared, dynamic_base_, 0};
    }
    // Parameter and return areas of each .func, in per-thread local memory.
    for (auto& [name, fl] : funcs_) {
      if (!fl.definition || fl.definition->is_entry) continue;
      for (const VarDecl& d : fl.definition->params) {
        fl.param_offsets.push_back(alloc_local(d));
        fl.param_sizes.push_back(var_size(d));
      }
      for (const VarDecl& d : fl.definition->returns) {
        fl.return_offsets.push_back(alloc_local(d));
        fl.return_sizes.push_back(var_size(d));
      }
    }
    return Status::ok();
  }

  uint64_t alloc_shared(const VarDecl& d) {
    shared_top_ = align_up(shared_top_, std::max<size_t>(var_align(d), 1));
    const uint64_t off = shared_top_;
    shared_top_ += var_size(d);
    return off;
  }
  uint64_t alloc_local(const VarDecl& d) {
    p_.local_bytes = align_up(p_.local_bytes, std::max<size_t>(var_align(d), 1));
    const uint64_t off = p_.local_bytes;
    p_.local_bytes += std::max<size_t>(var_size(d), 1);
    return off;
  }

  Status place_module_var(const VarDecl& v, Space space) {
    const size_t es = elem_size(v.type);
    size_t size = var_size(v);
    // An unsized array with an initializer (".global .u32 g[] = {1, 2, 3}", reachable through an
    // answer's inline asm) has the initializer's length, as ptxas gives it; sized 0, its
    // initializer was copied past the end of the module's data.
    if (size == 0 && !v.init.empty()) size = v.init.size() * es;
    // Checked after the alignment's padding, which counts against the limit too.
    const size_t off = align_up(p_.module_data.size(), std::max<size_t>(var_align(v), 1));
    if (off > kMaxModuleDataBytes || size > kMaxModuleDataBytes - off) {
      return unsupported("PTX line " + std::to_string(v.line) + ": module variable " + v.name +
                         " of " + std::to_string(size) + " bytes (the interpreter allows " +
                         std::to_string(kMaxModuleDataBytes) + " in all)");
    }
    p_.module_data.resize(off + size, 0);
    if (v.init.size() * es > size) {
      return invalid_input("PTX line " + std::to_string(v.line) + ": too many initializers for " +
                           v.name);
    }
    const Type t = parse_type(v.type);
    for (size_t i = 0; i < v.init.size(); ++i) {
      const Operand& o = v.init[i];
      uint64_t bits = o.bits;
      if (o.kind == Operand::Kind::kF64 && t == Type::kF32) {
        double d;
        std::memcpy(&d, &o.bits, 8);
        bits = std::bit_cast<uint32_t>(static_cast<float>(d));
      } else if (o.kind == Operand::Kind::kF32 && t == Type::kF64) {
        bits = std::bit_cast<uint64_t>(
            static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(o.bits))));
      } else if (o.kind != Operand::Kind::kInt && o.kind != Operand::Kind::kF32 &&
                 o.kind != Operand::Kind::kF64) {
        return unsupported("PTX line " + std::to_string(v.line) + ": initializer of " + v.name +
                           " that is not a number (addresses of variables)");
      }
      std::memcpy(p_.module_data.data() + off + i * es, &bits, es);
    }
    module_syms_[v.name] = Symbol{space, kModuleGlobalBase + off, size};
    return Status::ok();
  }

  // ---- pass 2: function bodies ----------------------------------------------------------------
  Status decode_function(const Function& f) {
    cur_ = &f;
    FuncLayout& fl = funcs_[f.name];
    fl.entry_pc = static_cast<uint32_t>(p_.code.size());
    scopes_.assign(1, {});
    labels_.clear();
    branch_fixups_.clear();
    // Parameters.
    if (f.is_entry) {
      KernelCode k;
      k.info.name = f.name;
      k.entry_pc = fl.entry_pc;
      size_t off = 0;
      for (const VarDecl& d : f.params) {
        const size_t align = std::max<size_t>(var_align(d), 1);
        off = align_up(off, align);
        ParamInfo pi;
        pi.name = d.name;
        pi.type = d.type;
        pi.size = var_size(d);
        pi.align = align;
        k.param_offsets.push_back(off);
        Binding b;
        b.kind = Binding::Kind::kSymbol;
        b.sym = Symbol{Space::kParam, off, pi.size};
        b.kernel_param = true;
        scopes_[0][d.name] = b;
        off += pi.size;
        k.info.params.push_back(std::move(pi));
      }
      k.param_bytes = off;
      p_.kernels.push_back(std::move(k));
    } else {
      for (size_t i = 0; i < f.params.size(); ++i) {
        bind_local(f.params[i].name, fl.param_offsets[i], fl.param_sizes[i]);
      }
      for (size_t i = 0; i < f.returns.size(); ++i) {
        bind_local(f.returns[i].name, fl.return_offsets[i], fl.return_sizes[i]);
      }
    }
    // Labels: the pc of the next instruction.
    uint32_t pc = fl.entry_pc;
    for (const Statement& s : f.body) {
      if (s.kind == Statement::Kind::kLabel) labels_[s.opcode] = pc;
      if (s.kind == Statement::Kind::kInstruction) ++pc;
    }
    for (const Statement& s : f.body) {
      switch (s.kind) {
        case Statement::Kind::kScopeOpen:
          scopes_.emplace_back();
          break;
        case Statement::Kind::kScopeClose:
          if (scopes_.size() > 1) scopes_.pop_back();
          break;
        case Statement::Kind::kLabel:
          break;
        case Statement::Kind::kDecl:
          LEAP_RETURN_IF_ERROR(declare(s));
          break;
        case Statement::Kind::kInstruction: {
          Status st = decode_instruction(s);
          if (!st) return st;
          break;
        }
      }
    }
    // Falling off the end of a body returns (or exits a kernel).
    Statement ret;
    ret.opcode = "ret";
    ret.text = "ret (end of " + f.name + ")";
    ret.line = 0;
    LEAP_RETURN_IF_ERROR(decode_instruction(ret));
    for (const auto& [index, label] : branch_fixups_) {
      auto it = labels_.find(label);
      if (it == labels_.end()) return invalid_input("PTX: branch to unknown label " + label);
      p_.code[index].aux = it->second;
    }
    return Status::ok();
  }

  void bind_local(const std::string& name, uint64_t off, size_t size) {
    Binding b;
    b.kind = Binding::Kind::kSymbol;
    b.sym = Symbol{Space::kLocal, off, size};
    scopes_.back()[name] = b;
  }

  Status declare(const Statement& s) {
    const VarDecl& d = s.decl;
    if (d.space == ".reg") {
      const Type t = parse_type(d.type);
      if (t == Type::kNone || t == Type::kB128) {
        return unsupported("PTX line " + std::to_string(d.line) + ": register type " + d.type);
      }
      const int width = type_bits(t);
      if (d.range >= 0) {
        for (int64_t i = 0; i < d.range; ++i) add_reg(d.name + std::to_string(i), width);
      } else {
        add_reg(d.name, width);
      }
      return Status::ok();
    }
    Binding b;
    b.kind = Binding::Kind::kSymbol;
    if (d.space == ".local" || d.space == ".param") {
      b.sym = Symbol{Space::kLocal, alloc_local(d), var_size(d)};
    } else if (d.space == ".shared") {
      b.sym = Symbol{Space::kShared, shared_decl_offsets_.at(&s), var_size(d)};
    } else {
      return unsupported("PTX line " + std::to_string(d.line) + ": function-scope " + d.space +
                         " variables");
    }
    scopes_.back()[d.name] = b;
    return Status::ok();
  }

  void add_reg(const std::string& name, int width) {
    Binding b;
    b.kind = Binding::Kind::kReg;
    b.slot = p_.slot_count++;
    b.width = width;
    scopes_.back()[name] = b;
  }

  const Binding* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  const Symbol* module_symbol(const std::string& name) const {
    auto it = module_syms_.find(name);
    return it == module_syms_.end() ? nullptr : &it->second;
  }

  uint32_t const_slot(uint64_t value) {
    auto it = const_by_value_.find(value);
    if (it != const_by_value_.end()) return it->second;
    const uint32_t slot = p_.slot_count++;
    const_by_value_[value] = slot;
    consts_.emplace_back(slot, value);
    return slot;
  }
  uint32_t special_slot(SpecialReg r) {
    auto it = special_by_reg_.find(r);
    if (it != special_by_reg_.end()) return it->second;
    const uint32_t slot = p_.slot_count++;
    special_by_reg_[r] = slot;
    p_.special_slots.push_back({slot, r});
    return slot;
  }

  Status error(const Statement& s, const std::string& what) const {
    return invalid_input("PTX line " + std::to_string(s.line) + ": " + what + " in '" + s.text +
                         "'");
  }
  Status unsupported_instr(const Statement& s, const std::string& what) const {
    return unsupported("unsupported PTX " + what + " '" + s.text + "' (line " +
                       std::to_string(s.line) + ")");
  }

  // The address a symbol stands for; `generic` adds the window of shared/local/param.
  static uint64_t symbol_address(const Symbol& sym, bool generic) {
    if (!generic) return sym.offset;
    switch (sym.space) {
      case Space::kShared:
        return kSharedWindow + sym.offset;
      case Space::kLocal:
        return kLocalWindow + sym.offset;
      case Space::kParam:
        return kParamWindow + sym.offset;
      default:
        return sym.offset;
    }
  }

  static uint64_t immediate_bits(const Operand& o, Type t) {
    const int bits = type_bits(t);
    uint64_t v = o.bits;
    if (t == Type::kF32) {
      if (o.kind == Operand::Kind::kF64)
        v = std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(o.bits)));
      if (o.kind == Operand::Kind::kInt)
        v = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int64_t>(o.bits)));
    } else if (t == Type::kF64) {
      if (o.kind == Operand::Kind::kF32)
        v = std::bit_cast<uint64_t>(
            static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(o.bits))));
      if (o.kind == Operand::Kind::kInt)
        v = std::bit_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(o.bits)));
    }
    if (bits > 1 && bits < 64) v &= (1ull << bits) - 1;
    if (bits == 1) v = v != 0;
    return v;
  }

  // A source operand's slot.
  Expected<uint32_t> source(const Statement& s, const Operand& o, Type imm_type) {
    switch (o.kind) {
      case Operand::Kind::kInt:
      case Operand::Kind::kF32:
      case Operand::Kind::kF64:
        return const_slot(immediate_bits(o, imm_type));
      case Operand::Kind::kName: {
        if (o.name == "_") return kSlotFalse;
        if (const Binding* b = lookup(o.name)) {
          if (b->kind == Binding::Kind::kReg) {
            if (o.offset != 0) return error(s, "register with an offset");
            return b->slot;
          }
          return const_slot(symbol_address(b->sym, false) + static_cast<uint64_t>(o.offset));
        }
        for (const SpecialName& sp : kSpecials) {
          if (o.name == sp.name) return special_slot(sp.reg);
        }
        if (const Symbol* sym = module_symbol(o.name)) {
          return const_slot(symbol_address(*sym, false) + static_cast<uint64_t>(o.offset));
        }
        if (o.name.rfind("%", 0) == 0) return unsupported_instr(s, "register " + o.name + " in");
        if (funcs_.count(o.name)) return unsupported_instr(s, "function pointer in");
        return error(s, "unknown name " + o.name);
      }
      default:
        return error(s, "unexpected operand form");
    }
  }
  Expected<uint32_t> dest(const Statement& s, const Operand& o, int* width = nullptr) {
    if (o.kind != Operand::Kind::kName) return error(s, "expected a register");
    if (o.name == "_") return kSlotSink;
    const Binding* b = lookup(o.name);
    if (!b || b->kind != Binding::Kind::kReg) return error(s, "expected a register, got " + o.name);
    if (width) *width = b->width;
    return b->slot;
  }

  // [base+off]: base slot and offset; `space` is the instruction's, which the symbol may refine.
  Status address(const Statement& s, const Operand& o, bool generic, Instr* in, Space* space) {
    if (o.kind != Operand::Kind::kAddress) return error(s, "expected an address");
    in->off = o.offset;
    if (o.name.empty()) {
      in->a = kSlotFalse;
      return Status::ok();
    }
    const Binding* b = lookup(o.name);
    if (b && b->kind == Binding::Kind::kReg) {
      in->a = b->slot;
      if (*space == Space::kParam && !cur_->is_entry) *space = Space::kLocal;
      return Status::ok();
    }
    const Symbol* sym = b ? &b->sym : module_symbol(o.name);
    if (!sym) return error(s, "unknown name " + o.name);
    in->a = kSlotFalse;
    in->off += static_cast<int64_t>(symbol_address(*sym, generic));
    if (*space == Space::kParam && sym->space == Space::kLocal) *space = Space::kLocal;
    return Status::ok();
  }

  Status vector_regs(const Statement& s, const Operand& o, Instr* in, bool is_dest, Type t) {
    if (o.elems.size() > 4) return unsupported_instr(s, "vector of more than 4 in");
    for (size_t i = 0; i < o.elems.size(); ++i) {
      if (is_dest) {
        LEAP_ASSIGN_OR_RETURN(in->v[i], dest(s, o.elems[i]));
      } else {
        LEAP_ASSIGN_OR_RETURN(in->v[i], source(s, o.elems[i], t));
      }
    }
    return Status::ok();
  }

  Status decode_instruction(const Statement& s) {
    const OpSpec op = parse_opcode(s.opcode);
    Selection sel;
    const bool known = select_control(op, &sel) || select_memory(op, &sel) ||
                       select_int(op, &sel) || select_float(op, &sel);
    if (!known || !sel.fn) return unsupported_instr(s, "instruction");
    Instr in;
    in.fn = sel.fn;
    in.aux = sel.aux;
    in.text = static_cast<uint32_t>(p_.texts.size());
    p_.texts.push_back(s.line > 0 ? "`" + s.text + "` (PTX line " + std::to_string(s.line) + ")"
                                  : "`" + s.text + "`");
    if (!s.guard.empty()) {
      const Binding* g = lookup(s.guard);
      if (!g || g->kind != Binding::Kind::kReg) return error(s, "unknown guard predicate");
      in.guard = g->slot;
      in.gneg = s.guard_negated ? 1 : 0;
    }
    const auto& ops = s.operands;
    const Type imm = sel.imm_type;
    auto need = [&](size_t n) -> Status {
      return ops.size() >= n ? Status::ok() : error(s, "too few operands");
    };
    switch (sel.shape) {
      case Shape::kNone:
        break;
      case Shape::kBranch: {
        LEAP_RETURN_IF_ERROR(need(1));
        branch_fixups_.emplace_back(static_cast<uint32_t>(p_.code.size()), ops[0].name);
        break;
      }
      case Shape::kCall:
        LEAP_RETURN_IF_ERROR(bind_call(s, &in));
        break;
      case Shape::kBarrier: {
        LEAP_RETURN_IF_ERROR(need(1));
        LEAP_ASSIGN_OR_RETURN(in.a, source(s, ops[0], Type::kU32));
        if (ops.size() > 1) {
          LEAP_ASSIGN_OR_RETURN(in.b, source(s, ops[1], Type::kU32));
        }
        break;
      }
      case Shape::kLoad: {
        LEAP_RETURN_IF_ERROR(need(2));
        Space space = op.space;
        LEAP_RETURN_IF_ERROR(address(s, ops[1], space == Space::kGeneric, &in, &space));
        int width = 64;
        if (ops[0].kind == Operand::Kind::kVector) {
          if (ops[0].elems.size() != op.vec) return error(s, "vector size mismatch");
          LEAP_RETURN_IF_ERROR(vector_regs(s, ops[0], &in, true, imm));
          for (const Operand& e : ops[0].elems) {
            const Binding* b = e.name == "_" ? nullptr : lookup(e.name);
            if (b) width = b->width;
          }
        } else {
          LEAP_ASSIGN_OR_RETURN(in.d, dest(s, ops[0], &width));
        }
        in.fn = load_handler(space, op.type(0), op.vec);
        if (!in.fn) return unsupported_instr(s, "load");
        in.aux = op.vec | (static_cast<uint32_t>(width) << 8);
        break;
      }
      case Shape::kStore: {
        LEAP_RETURN_IF_ERROR(need(2));
        Space space = op.space;
        LEAP_RETURN_IF_ERROR(address(s, ops[0], space == Space::kGeneric, &in, &space));
        if (ops[1].kind == Operand::Kind::kVector) {
          if (ops[1].elems.size() != op.vec) return error(s, "vector size mismatch");
          LEAP_RETURN_IF_ERROR(vector_regs(s, ops[1], &in, false, imm));
        } else {
          LEAP_ASSIGN_OR_RETURN(in.b, source(s, ops[1], imm));
        }
        if (space == Space::kParam) return unsupported_instr(s, "store to kernel parameters");
        in.fn = store_handler(space, op.type(0), op.vec);
        if (!in.fn) return unsupported_instr(s, "store");
        break;
      }
      case Shape::kAtom: {
        LEAP_RETURN_IF_ERROR(need(3));
        Space space = op.space;
        LEAP_ASSIGN_OR_RETURN(in.d, dest(s, ops[0]));
        LEAP_RETURN_IF_ERROR(address(s, ops[1], space == Space::kGeneric, &in, &space));
        LEAP_ASSIGN_OR_RETURN(in.b, source(s, ops[2], imm));
        if (ops.size() > 3) {
          LEAP_ASSIGN_OR_RETURN(in.c, source(s, ops[3], imm));
        }
        break;
      }
      case Shape::kRed: {
        LEAP_RETURN_IF_ERROR(need(2));
        Space space = op.space;
        LEAP_RETURN_IF_ERROR(address(s, ops[0], space == Space::kGeneric, &in, &space));
        LEAP_ASSIGN_OR_RETURN(in.b, source(s, ops[1], imm));
        break;
      }
      case Shape::kCopyAsync: {
        LEAP_RETURN_IF_ERROR(need(3));
        Space dst_space = Space::kShared, src_space = Space::kGlobal;
        LEAP_RETURN_IF_ERROR(address(s, ops[0], false, &in, &dst_space));
        Instr src;
        LEAP_RETURN_IF_ERROR(address(s, ops[1], false, &src, &src_space));
        in.v[0] = src.a;
        in.v[1] = static_cast<uint32_t>(src.off);
        if (ops[2].kind != Operand::Kind::kInt) return error(s, "cp.async size must be a number");
        in.aux = static_cast<uint32_t>(ops[2].bits);
        if (ops.size() > 3 && ops[3].kind != Operand::Kind::kName) {
          LEAP_ASSIGN_OR_RETURN(in.c, source(s, ops[3], Type::kU32));
        } else if (ops.size() > 3 && lookup(ops[3].name)) {
          LEAP_ASSIGN_OR_RETURN(in.c, source(s, ops[3], Type::kU32));
        } else {
          in.c = const_slot(in.aux);
        }
        break;
      }
      case Shape::kShfl:
      case Shape::kVote: {
        LEAP_RETURN_IF_ERROR(need(1));
        const size_t n = ops.size();
        LEAP_ASSIGN_OR_RETURN(in.v[0], source(s, ops[n - 1], Type::kU32));
        if (n >= 2) LEAP_RETURN_IF_ERROR(bind_dest(s, ops[0], &in));
        uint32_t* srcs[] = {&in.a, &in.b, &in.c};
        for (size_t i = 1; i + 1 < n && i <= 3; ++i) {
          if (ops[i].negated) in.aux |= 1u << 16;
          LEAP_ASSIGN_OR_RETURN(*srcs[i - 1], source(s, ops[i], Type::kU32));
        }
        break;
      }
      case Shape::kAlu:
        LEAP_RETURN_IF_ERROR(bind_alu(s, op, imm, &in));
        break;
    }
    p_.code.push_back(in);
    return Status::ok();
  }

  Status bind_dest(const Statement& s, const Operand& o, Instr* in) {
    if (o.kind == Operand::Kind::kPair) {
      LEAP_ASSIGN_OR_RETURN(in->d, dest(s, o.elems[0]));
      LEAP_ASSIGN_OR_RETURN(in->e, dest(s, o.elems[1]));
      return Status::ok();
    }
    LEAP_ASSIGN_OR_RETURN(in->d, dest(s, o));
    in->e = kSlotSink;
    return Status::ok();
  }

  Status bind_alu(const Statement& s, const OpSpec& op, Type imm, Instr* in) {
    const auto& ops = s.operands;
    if (ops.empty()) return error(s, "missing operands");
    // bar.red.op d, id, [count,] pred
    if ((op.base == "bar" || op.base == "barrier") && op.has("red")) {
      if (ops.size() < 3) return error(s, "too few operands");
      LEAP_ASSIGN_OR_RETURN(in->d, dest(s, ops[0]));
      LEAP_ASSIGN_OR_RETURN(in->a, source(s, ops[1], Type::kU32));
      LEAP_ASSIGN_OR_RETURN(in->c, source(s, ops.back(), Type::kPred));
      if (ops.back().negated) in->aux |= 1u << 8;
      return Status::ok();
    }
    if (op.base == "mov" && ops.size() == 2 &&
        (ops[0].kind == Operand::Kind::kVector || ops[1].kind == Operand::Kind::kVector)) {
      const bool unpack = ops[0].kind == Operand::Kind::kVector;
      const Operand& vec = unpack ? ops[0] : ops[1];
      const uint32_t n = static_cast<uint32_t>(vec.elems.size());
      if (n < 2 || n > 4) return unsupported_instr(s, "vector mov");
      const uint32_t lane_bits = static_cast<uint32_t>(type_bits(op.type(0))) / n;
      in->aux = lane_bits | (n << 8);
      LEAP_RETURN_IF_ERROR(vector_regs(s, vec, in, unpack, Type::kB64));
      if (unpack) {
        in->fn = unpack_handler();
        LEAP_ASSIGN_OR_RETURN(in->a, source(s, ops[1], op.type(0)));
      } else {
        in->fn = pack_handler();
        LEAP_ASSIGN_OR_RETURN(in->d, dest(s, ops[0]));
      }
      return Status::ok();
    }
    size_t first_src = 1;
    if (op.base == "activemask") {
      LEAP_ASSIGN_OR_RETURN(in->d, dest(s, ops[0]));
      in->v[0] = const_slot(0xffffffffu);
      return Status::ok();
    }
    LEAP_RETURN_IF_ERROR(bind_dest(s, ops[0], in));
    if (op.base == "cvta") {
      const bool to = op.has("to");
      uint64_t window = 0;
      if (op.space == Space::kShared) window = kSharedWindow;
      if (op.space == Space::kLocal) window = kLocalWindow;
      if (op.space == Space::kParam) window = kParamWindow;
      in->off = to ? -static_cast<int64_t>(window) : static_cast<int64_t>(window);
    }
    uint32_t* srcs[] = {&in->a, &in->b, &in->c, &in->e};
    const size_t max_src = ops[0].kind == Operand::Kind::kPair ? 3 : 4;
    if (ops.size() - first_src > max_src) return error(s, "too many operands");
    for (size_t i = first_src; i < ops.size(); ++i) {
      const size_t k = i - first_src;
      // selp's third source and setp's combining predicate are predicates.
      Type t = imm;
      if ((op.base == "selp" || op.base == "setp") && k == 2) t = Type::kPred;
      if (op.base == "mad" && op.has("wide") && k == 2) t = Type::kB64;
      if (ops[i].negated) {
        if (op.base != "setp" || k != 2) return unsupported_instr(s, "negated operand in");
        in->aux |= 4;
      }
      LEAP_ASSIGN_OR_RETURN(*srcs[k], source(s, ops[i], t));
    }
    return Status::ok();
  }

  // call[.uni] [(ret, ...),] func, [(param, ...)] [, proto]
  Status bind_call(const Statement& s, Instr* in) {
    const auto& ops = s.operands;
    size_t i = 0;
    CallFixup fix;
    fix.line = s.line;
    auto area = [&](const Operand& o) -> Expected<std::pair<uint64_t, size_t>> {
      const Binding* b = lookup(o.name);
      if (!b || b->kind != Binding::Kind::kSymbol || b->sym.space != Space::kLocal) {
        return unsupported_instr(s, "call argument " + o.name + " in");
      }
      return std::make_pair(b->sym.offset, static_cast<size_t>(b->sym.size));
    };
    if (i < ops.size() && ops[i].kind == Operand::Kind::kList) {
      for (const Operand& o : ops[i].elems) {
        LEAP_ASSIGN_OR_RETURN(auto a, area(o));
        fix.results.push_back(a);
      }
      ++i;
    }
    if (i >= ops.size() || ops[i].kind != Operand::Kind::kName)
      return error(s, "expected a function");
    fix.callee = ops[i].name;
    if (!funcs_.count(fix.callee)) return unsupported_instr(s, "indirect call");
    ++i;
    if (i < ops.size() && ops[i].kind == Operand::Kind::kList) {
      for (const Operand& o : ops[i].elems) {
        LEAP_ASSIGN_OR_RETURN(auto a, area(o));
        fix.args.push_back(a);
      }
      ++i;
    }
    fix.call_index = static_cast<uint32_t>(p_.calls.size());
    in->aux = fix.call_index;
    p_.calls.emplace_back();
    funcs_[cur_->name].callees.push_back(fix.callee);
    call_fixups_.push_back(std::move(fix));
    return Status::ok();
  }

  Status link_calls() {
    for (const CallFixup& f : call_fixups_) {
      CallSite& cs = p_.calls[f.call_index];
      const FuncLayout& fl = funcs_.at(f.callee);
      if (!fl.definition) {
        if (f.callee == "vprintf") {
          cs.extern_kind = 1;
        } else if (f.callee == "__assertfail") {
          cs.extern_kind = 2;
        } else {
          return unsupported("unsupported call to external function " + f.callee + " (line " +
                             std::to_string(f.line) + ")");
        }
        for (const auto& [off, size] : f.results)
          cs.results.push_back({0, static_cast<uint32_t>(off), static_cast<uint32_t>(size)});
        continue;
      }
      cs.target_pc = fl.entry_pc;
      for (size_t k = 0; k < f.args.size() && k < fl.param_offsets.size(); ++k) {
        const size_t n = std::min(f.args[k].second, fl.param_sizes[k]);
        cs.args.push_back({static_cast<uint32_t>(f.args[k].first),
                           static_cast<uint32_t>(fl.param_offsets[k]), static_cast<uint32_t>(n)});
      }
      for (size_t k = 0; k < f.results.size() && k < fl.return_offsets.size(); ++k) {
        const size_t n = std::min(f.results[k].second, fl.return_sizes[k]);
        cs.results.push_back({static_cast<uint32_t>(fl.return_offsets[k]),
                              static_cast<uint32_t>(f.results[k].first), static_cast<uint32_t>(n)});
      }
    }
    // Recursion would need dynamic frames: reject it, and size the call stacks.
    std::map<std::string, int> state;  // 1 visiting, 2 done
    std::map<std::string, size_t> depth;
    std::string cycle;
    std::function<size_t(const std::string&)> visit = [&](const std::string& name) -> size_t {
      if (state[name] == 1) {
        cycle = name;
        return 0;
      }
      if (state[name] == 2) return depth[name];
      state[name] = 1;
      size_t d = 0;
      for (const std::string& c : funcs_[name].callees) d = std::max(d, visit(c) + 1);
      state[name] = 2;
      return depth[name] = d;
    };
    for (auto& [name, fl] : funcs_) {
      p_.max_call_depth = std::max(p_.max_call_depth, visit(name));
      if (!cycle.empty()) return unsupported("unsupported recursive device function " + cycle);
    }
    return Status::ok();
  }

  // Shared bytes of a function and everything it calls.
  size_t shared_of(const std::string& name, std::map<std::string, bool>* seen) {
    if ((*seen)[name]) return 0;
    (*seen)[name] = true;
    size_t total = funcs_[name].own_shared;
    for (const std::string& c : funcs_[name].callees) total += shared_of(c, seen);
    return total;
  }

  Status finish_kernels() {
    for (KernelCode& k : p_.kernels) {
      std::map<std::string, bool> seen;
      k.info.static_shared_bytes = module_shared_ + shared_of(k.info.name, &seen);
      k.shared_static_bytes = dynamic_base_;
      p_.kernel_infos.push_back(k.info);
    }
    return Status::ok();
  }

  const ParsedModule& m_;
  Program p_;
  const Function* cur_ = nullptr;
  std::map<std::string, FuncLayout> funcs_;
  std::unordered_map<std::string, Symbol> module_syms_;
  std::vector<std::string> dynamic_shared_;
  std::map<const Statement*, uint64_t> shared_decl_offsets_;
  size_t shared_top_ = 0, module_shared_ = 0, dynamic_base_ = 0;
  std::vector<std::unordered_map<std::string, Binding>> scopes_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<std::pair<uint32_t, std::string>> branch_fixups_;
  std::vector<CallFixup> call_fixups_;
  std::unordered_map<uint64_t, uint32_t> const_by_value_;
  std::vector<std::pair<uint32_t, uint64_t>> consts_;
  std::map<SpecialReg, uint32_t> special_by_reg_;
};

}  // namespace

Expected<Program> decode_module(const ParsedModule& parsed) {
  return Decoder(parsed).run();
}

bool opcode_supported(std::string_view opcode) {
  const OpSpec op = parse_opcode(opcode);
  Selection sel;
  const bool known = select_control(op, &sel) || select_memory(op, &sel) || select_int(op, &sel) ||
                     select_float(op, &sel);
  return known && sel.fn != nullptr;
}

}  // namespace leap::sandbox::ptx
