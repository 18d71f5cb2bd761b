// The parsed template: expressions and statements of the supported Jinja subset, each with the
// template line it came from (errors name it). Built once by parse_template(); read-only after.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"

namespace leap::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // children: items; name "tuple" for a tuple literal
    kDict,     // children: key, value, key, value, ...
    kAttr,     // children[0] . name
    kIndex,    // children[0] [ children[1] ]
    kSlice,    // children[0] [ children[1] : children[2] : children[3] ] (null where omitted)
    kCall,     // children[0] ( args ), keyword arguments in kwargs
    kFilter,   // children[0] | name ( args )
    kTest,     // children[0] is [not] name ( args ); negated
    kNot,      // not children[0]
    kNegate,   // - children[0]
    kBinary,   // children[0] op children[1]; op is "or", "and", "==", "in", "not in", "+", "~", ...
    kCondition,  // children[1] if children[0] else children[2] (children[2] may be null)
  };
  Kind kind;
  int line = 0;
  std::string name;  // kName, kAttr, kFilter, kTest, kBinary (the operator), kList ("tuple")
  Value value;       // kLiteral
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<ExprPtr> args;  // kCall, kFilter, kTest: positional arguments
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue, kMacro };
  Kind kind;
  int line = 0;
  std::string text;  // kText
  ExprPtr expr;      // kOutput, kFor (the iterable), kSet (the value)
  // kIf: one (condition, body) per if/elif; else_body for else.
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;                         // kFor, kMacro
  Body else_body;                    // kIf, kFor
  std::vector<std::string> targets;  // kFor: loop variables; kSet, kMacro: the name
  std::string attr;                  // kSet: `set ns.attr = ...` when not empty
  ExprPtr filter;                    // kFor: `for x in xs if cond`
  // kMacro: the parameters in order, each with its default (null: none; then the argument is
  // Undefined when the call leaves it out, as in jinja2).
  std::vector<std::pair<std::string, ExprPtr>> params;
};

}  // namespace leap::chat
