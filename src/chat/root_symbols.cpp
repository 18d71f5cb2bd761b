// The top level's symbol table as jinja2's compiler builds it (idtracking.py's
// FrameSymbolVisitor and Symbols.branch_update): statements in order; a `set` reads its value
// before it stores its name; a for loop's body, filter and else and a macro's body are frames of
// their own, and the top level sees only the loop's iterable and the macro's name.
#include "chat/root_symbols.h"

#include <map>
#include <vector>

namespace leap::chat {
namespace {

struct Symbols {
  std::map<std::string, bool> undefined_first;  // every name mentioned: true when stored first
  std::set<std::string> stores;
};

class RootVisitor {
 public:
  void body(const Body& b, Symbols& s) {
    for (const auto& st : b) statement(*st, s);
  }

 private:
  static void load(const std::string& name, Symbols& s) { s.undefined_first.emplace(name, false); }
  static void store(const std::string& name, Symbols& s) {
    s.undefined_first.emplace(name, true);
    s.stores.insert(name);
  }

  void loads(const Expr* e, Symbols& s) {
    if (e == nullptr) return;
    if (e->kind == Expr::Kind::kName) load(e->name, s);
    for (const auto& c : e->children) loads(c.get(), s);
    for (const auto& a : e->args) loads(a.get(), s);
    for (const auto& [key, a] : e->kwargs) loads(a.get(), s);
  }

  void statement(const Stmt& st, Symbols& s) {
    switch (st.kind) {
      case Stmt::Kind::kOutput:
        loads(st.expr.get(), s);
        return;
      case Stmt::Kind::kSet:
        loads(st.expr.get(), s);
        if (st.attr.empty())
          store(st.targets[0], s);
        else
          load(st.targets[0], s);  // ns.x = ...: reads ns
        return;
      case Stmt::Kind::kFor:
        loads(st.expr.get(), s);
        return;
      case Stmt::Kind::kMacro:
        store(st.targets[0], s);
        return;
      case Stmt::Kind::kIf:
        branches(st, 0, s);
        return;
      default:
        return;
    }
  }

  // jinja2 parses `if a .. elif b .. elif c .. else ..` as If(a, body, elif_=[If(b), If(c)],
  // else): the elif nodes are one branch, each of them an If with empty elif and else.
  void branches(const Stmt& st, size_t k, Symbols& s) {
    loads(st.branches[k].first.get(), s);
    std::vector<Symbols> parts(3, s);
    body(st.branches[k].second, parts[0]);
    if (k == 0) {
      for (size_t e = 1; e < st.branches.size(); ++e) branches(st, e, parts[1]);
      body(st.else_body, parts[2]);
    }
    merge(parts, s);
  }

  // Symbols.branch_update: every branch's names come back (the last branch's kind winning, as
  // dict.update does), and a name stored in only some branches is read from the caller first.
  static void merge(const std::vector<Symbols>& parts, Symbols& s) {
    std::map<std::string, size_t> stored_in;
    for (const Symbols& p : parts)
      for (const std::string& name : p.stores)
        if (!s.stores.count(name)) ++stored_in[name];
    for (const Symbols& p : parts) {
      for (const auto& [name, undefined] : p.undefined_first) s.undefined_first[name] = undefined;
      s.stores.insert(p.stores.begin(), p.stores.end());
    }
    for (const auto& [name, count] : stored_in)
      if (count != parts.size()) s.undefined_first[name] = false;
  }
};

}  // namespace

std::set<std::string> names_undefined_until_set(const Body& root) {
  Symbols s;
  RootVisitor().body(root, s);
  std::set<std::string> out;
  for (const auto& [name, undefined] : s.undefined_first)
    if (undefined) out.insert(name);
  return out;
}

}  // namespace leap::chat
