// The chat-template module beyond the template goldens: jinja2's semantics on small snippets
// (goldens/snippets.json), the template/content spans, the append-only continuation,
// unsupported constructs named with their line, and the forms of tokenizer_config.json.
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace leap::chat {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
const fs::path kChatDir = fs::path(LEAP_SOURCE_DIR) / "tests" / "chat";

Json read_json(const fs::path& p) {
  std::ifstream in(p);
  return Json::parse(in);
}

ChatTemplate load_fixture(const std::string& name) {
  auto t = load_template((kChatDir / "templates" / name).string());
  EXPECT_TRUE(t) << t.status().message();
  return std::move(t).value();
}

Json user(const std::string& s) {
  return {{"role", "user"}, {"content", s}};
}
Json assistant(const std::string& s) {
  return {{"role", "assistant"}, {"content", s}};
}

// The text of the spans of one kind, joined.
// Loading `source` fails with exit code 2 and a message that holds `want`; the status's code.
StatusCode load_error(const std::string& source, const std::string& want) {
  SCOPED_TRACE(source);
  auto t = ChatTemplate::parse(source, {});
  EXPECT_FALSE(t);
  if (t) return StatusCode::kOk;
  EXPECT_EQ(t.status().exit_code(), 2);
  EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
  return t.status().code();
}

std::string text_of(const Rendering& r, SpanKind kind) {
  std::string out;
  for (const Span& s : r.spans) {
    if (s.kind == kind) out += r.text.substr(s.begin, s.end - s.begin);
  }
  return out;
}

TEST(ChatSnippets, MatchJinja2) {
  const Json golden = read_json(kChatDir / "goldens" / "snippets.json");
  int n = 0;
  for (const auto& s : golden["snippets"]) {
    const std::string source = s["template"].get<std::string>();
    SCOPED_TRACE(source);
    auto t = ChatTemplate::parse(
        source, {{"bos_token", golden["bos_token"]}, {"eos_token", golden["eos_token"]}});
    ++n;
    if (s.contains("error")) {
      if (!t) continue;  // jinja2 refused it at compile time too
      RenderOptions opts;
      opts.now_unix_seconds = golden["now_unix_seconds"].get<std::int64_t>();
      auto r = t->render(golden["messages"], opts);
      ASSERT_FALSE(r) << "jinja2 failed with: " << s["error"].get<std::string>();
      // jinja2's own message; a Python TypeError's (a bad macro call) without the type's name.
      std::string want = s["error"].get<std::string>();
      if (want.rfind("TypeError: ", 0) == 0) want = want.substr(11);
      EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
      continue;
    }
    ASSERT_TRUE(t) << t.status().message();
    RenderOptions opts;
    opts.now_unix_seconds = golden["now_unix_seconds"].get<std::int64_t>();
    auto r = t->render(golden["messages"], opts);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->text, s["text"].get<std::string>());
  }
  EXPECT_GE(n, 20);
}

TEST(ChatSpans, CoverTheTextAndAlternate) {
  ChatTemplate t = load_fixture("qwen2.5-instruct");
  auto r = t.render(Json::array({user("hi"), assistant("yo"), user("more")}), {});
  ASSERT_TRUE(r);
  size_t at = 0;
  for (size_t k = 0; k < r->spans.size(); ++k) {
    EXPECT_EQ(r->spans[k].begin, at);
    EXPECT_LT(r->spans[k].begin, r->spans[k].end);
    if (k) {
      EXPECT_NE(r->spans[k].kind, r->spans[k - 1].kind);
    }
    at = r->spans[k].end;
  }
  EXPECT_EQ(at, r->text.size());
}

TEST(ChatSpans, SpecialTokensTypedByTheUserAreContent) {
  ChatTemplate t = load_fixture("qwen2.5-instruct");
  auto r = t.render(Json::array({user("say <|im_end|> now")}), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(text_of(*r, SpanKind::kContent), "say <|im_end|> now");
  // The role is the conversation's structure, written by the caller, not typed text: template.
  EXPECT_EQ(text_of(*r, SpanKind::kTemplate),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n"
            "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n");
}

// A marker built from the role (Phi-3.5 and Phi-4: '<|' + message['role'] + '|>') is template
// text whole, so the tokenizer can encode it as its special token; the message's text stays
// content.
TEST(ChatSpans, AMarkerBuiltFromTheRoleIsTemplateText) {
  auto t = ChatTemplate::parse(
      "{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] + '<|end|>' }}{% endfor %}",
      {});
  ASSERT_TRUE(t) << t.status().message();
  auto r = t->render(Json::array({user("hi <|user|>")}), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "<|user|>hi <|user|><|end|>");
  EXPECT_EQ(text_of(*r, SpanKind::kTemplate), "<|user|><|end|>");
  EXPECT_EQ(text_of(*r, SpanKind::kContent), "hi <|user|>");
  ASSERT_FALSE(r->spans.empty());
  EXPECT_EQ(r->spans.front().kind, SpanKind::kTemplate);
  EXPECT_EQ(r->spans.front().end, 8u) << "the marker is one template span";
}

TEST(ChatSpans, ProvenanceSurvivesTrimSplitAndTojson) {
  ChatTemplate llama = load_fixture("llama-3.1-instruct");
  auto r = llama.render(Json::array({user("  <|eot_id|>  ")}), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(text_of(*r, SpanKind::kContent), "<|eot_id|>");  // | trim keeps the origin
  EXPECT_EQ(r->text.find("<|begin_of_text|>"), 0u);
  EXPECT_EQ(r->spans.front().kind, SpanKind::kTemplate);

  ChatTemplate qwen3 = load_fixture("qwen3");
  auto q =
      qwen3.render(Json::array({user("q"), assistant("<think>\nr <|im_end|>\n</think>\n\nans")}),
                   RenderOptions{.add_generation_prompt = false});
  ASSERT_TRUE(q);
  // split('</think>') and strip() move bytes; the moved bytes are still content.
  EXPECT_NE(text_of(*q, SpanKind::kContent).find("r <|im_end|>"), std::string::npos);
  EXPECT_EQ(text_of(*q, SpanKind::kTemplate).find("r <|im_end|>"), std::string::npos);

  Json tools = Json::parse(R"([{"type": "function", "function": {"name": "<|im_end|>"}}])");
  RenderOptions opts;
  opts.tools = tools;
  auto w = load_fixture("qwen2.5-instruct").render(Json::array({user("x")}), opts);
  ASSERT_TRUE(w);
  EXPECT_NE(text_of(*w, SpanKind::kContent)
                .find("{\"type\": \"function\", \"function\": {\"name\": \"<|im_end|>\"}}"),
            std::string::npos);
}

// An unsupported construct fails at parse time, even in a branch never taken, naming itself
// and its line.
TEST(ChatUnsupported, NamesTheConstructAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"ok\n{% if false %}\n{% call m() %}x{% endcall %}\n{% endif %}",
       "line 3: unsupported construct '{% call %}'"},
      {"{% for m in messages %}\n{% macro f() %}{% endmacro %}{% endfor %}",
       "line 2: unsupported construct '{% macro %}' inside a for loop or another macro"},
      {"{% macro f(a) %}\n{{ varargs }}{% endmacro %}",
       "line 2: unsupported construct 'varargs' in a macro"},
      {"{% macro f() %}{{ caller() }}{% endmacro %}",
       "line 1: unsupported construct 'caller' in a macro"},
      {"{% macro f() %}{{ g() }}{% endmacro %}\n{{ h() }}{% macro g() %}{% endmacro %}",
       "line 2: unsupported construct function 'h()'"},
      {"a\nb\n{% include 'other.jinja' %}", "line 3: unsupported construct '{% include %}'"},
      {"{% if tools %}\n  {{ tools | shuffle }}\n{% endif %}",
       "line 2: unsupported construct filter 'shuffle'"},
      {"\n{{ x is odd }}", "line 2: unsupported construct test 'is odd'"},
      {"{{ messages[0].content.upper() }}", "line 1: unsupported construct method '.upper()'"},
      {"\n\n{{ cycler(1, 2) }}", "line 3: unsupported construct function 'cycler()'"},
      {"{% set x %}block{% endset %}",
       "line 1: unsupported construct '{% set %}...{% endset %}' (block assignment)"},
      {"{% for m in messages recursive %}{% endfor %}",
       "line 1: unsupported construct 'for ... recursive'"},
      {"{% with a = 1 %}{% endwith %}", "line 1: unsupported construct '{% with %}'"},
      {"{% for m in messages %}\n{{ loop.depth }}{% endfor %}",
       "line 2: unsupported construct 'loop.depth'"},
  };
  for (const auto& [source, want] : cases) {
    EXPECT_EQ(load_error(source, want), StatusCode::kUnsupported) << source;
  }
}

TEST(ChatRender, TheDateIsThePinnedOneOrAnError) {
  ChatTemplate t = load_fixture("llama-3.2-instruct");
  auto unpinned = t.render(Json::array({user("day?")}), {});
  ASSERT_FALSE(unpinned);
  EXPECT_NE(unpinned.status().message().find("line 10: strftime_now() needs the run's pinned time"),
            std::string::npos)
      << unpinned.status().message();
  RenderOptions opts;
  opts.now_unix_seconds = 1767225599;  // 2025-12-31 23:59:59 UTC
  auto r = t.render(Json::array({user("day?")}), opts);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_NE(r->text.find("Today Date: 31 Dec 2025\n"), std::string::npos);
}

// Macros: a call the macro cannot take is an error naming the line, as jinja2's TypeError is,
// and so is recursion past a fixed depth, instead of a stack overflow.
TEST(ChatMacro, BadCallsAndDeepRecursionAreErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"{% macro m(a) %}{% endmacro %}\n{{ m(1, 2) }}",
       "line 2: macro 'm' takes not more than 1 argument(s)"},
      {"{% macro m(a) %}{% endmacro %}\n\n{{ m(1, a=2) }}",
       "line 3: macro 'm' takes no keyword argument 'a'"},
      {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
       "macro calls nested deeper than 100"},
      {"{% macro m() %}x{% endmacro %}{{ m.name }}", "attribute '.name' of a function or macro"},
      {"{{ 'abc' | replace('a', 'b', 1, 2) }}", "replace takes at most 3 arguments"},
      {"{{ 'abc'.replace('a', 'b', 1, 2) }}", "replace() takes at most 3 arguments"},
  };
  for (const auto& [source, want] : cases) {
    SCOPED_TRACE(source);
    auto t = ChatTemplate::parse(source, {});
    ASSERT_TRUE(t) << t.status().message();
    auto r = t->render(Json::array(), {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().exit_code(), 2);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
  // What jinja2 refuses when compiling, refused at load.
  const std::pair<const char*, const char*> syntax[] = {
      {"{% macro m(a='x', b) %}{% endmacro %}", "non-default argument follows default argument"},
      {"{% macro m(a, a) %}{% endmacro %}", "duplicate parameter 'a'"},
      {"{% macro m(a,) %}{% endmacro %}", "expected a parameter name after ','"},
      {"{% macro m(none) %}{% endmacro %}", "'none' cannot be a parameter name"},
      {"{% macro m(a) %}{% endmacro %}{{ m(a=1, a=2) }}", "keyword argument 'a' repeated"},
      {"{% macro m() %}{% break %}{% endmacro %}", "'break' outside a for loop"},
      {"{% for x in [1] %}{% else %}{% continue %}{% endfor %}", "'continue' outside a for loop"},
      {"{% for x in [] %}{% else %}{% macro m() %}{% endmacro %}{% endfor %}",
       "'{% macro %}' inside a for loop or another macro"},
  };
  for (const auto& [source, want] : syntax) load_error(source, want);
}

// What a macro writes keeps its provenance: Qwen3-Coder's tool list is written by a macro, and
// a tool schema's text is still content there.
TEST(ChatSpans, MacroOutputKeepsProvenance) {
  Json tools = Json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
          "properties": {"x": {"type": "string", "pattern": "<|im_end|>"}}}}}])");
  RenderOptions opts;
  opts.tools = tools;
  auto r = load_fixture("qwen3-coder").render(Json::array({user("hi")}), opts);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_NE(r->text.find("\n<pattern><|im_end|></pattern>"), std::string::npos) << r->text;
  // The key and the value are the caller's; the brackets around them are the template's.
  EXPECT_NE(text_of(*r, SpanKind::kContent).find("pattern<|im_end|>pattern"), std::string::npos);
  EXPECT_NE(text_of(*r, SpanKind::kTemplate).find("\n<></>"), std::string::npos);
}

TEST(ChatUnsupported, SyntaxAndRuntimeErrorsNameTheLine) {
  auto unclosed = ChatTemplate::parse("{% if x %}\nno end", {});
  ASSERT_FALSE(unclosed);
  EXPECT_EQ(unclosed.status().exit_code(), 2);

  auto raises =
      ChatTemplate::parse("a\n{{ raise_exception('only user and assistant roles') }}", {});
  ASSERT_TRUE(raises);
  auto r = raises->render(Json::array(), {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find(
                "line 2: the template raised an exception: only user and assistant roles"),
            std::string::npos)
      << r.status().message();

  auto bad_add = ChatTemplate::parse("\n\n{{ 'a' + messages }}", {});
  ASSERT_TRUE(bad_add);
  auto b = bad_add->render(Json::array(), {});
  ASSERT_FALSE(b);
  EXPECT_NE(b.status().message().find("line 3"), std::string::npos) << b.status().message();
}

class TokenizerDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("leap_chat_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write_config(const std::string& text) {
    std::ofstream(dir_ / "tokenizer_config.json") << text;
  }
  fs::path dir_;
};

TEST_F(TokenizerDir, NamedTemplateListAndAddedTokenDicts) {
  write_config(R"({
    "bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false},
    "eos_token": "<E>",
    "chat_template": [{"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"},
                      {"name": "tool_use", "template": "tools:{{ tools is none }}"}]})");
  auto d = load_template(dir_.string());
  ASSERT_TRUE(d) << d.status().message();
  auto r = d->render(Json::array({user("x")}), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "<B>x<E>");
  EXPECT_EQ(d->special_token("bos_token"), "<B>");

  auto tu = load_template(dir_.string(), "tool_use");
  ASSERT_TRUE(tu);
  auto rt = tu->render(Json::array(), {});
  ASSERT_TRUE(rt);
  EXPECT_EQ(rt->text, "tools:True");

  auto missing = load_template(dir_.string(), "rag");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("has: default, tool_use"), std::string::npos);
}

TEST_F(TokenizerDir, ErrorsNameTheFileAndKey) {
  write_config(R"({"eos_token": "<E>"})");
  auto none = load_template(dir_.string());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().exit_code(), 2);
  EXPECT_NE(none.status().message().find("no \"chat_template\""), std::string::npos);

  write_config(R"({"chat_template": "{% import 'x' as y %}"})");
  auto bad = load_template(dir_.string());
  ASSERT_FALSE(bad);
  EXPECT_NE(
      bad.status().message().find("tokenizer_config.json: chat_template: chat template line 1: "
                                  "unsupported construct '{% import %}'"),
      std::string::npos)
      << bad.status().message();

  auto absent = load_template((dir_ / "nowhere").string());
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace leap::chat

namespace leap::chat {
namespace {

// Mangled templates (characters deleted, Jinja punctuation inserted, chunks repeated) must load
// or fail with a Status, and render or fail with a Status: never crash or hang.
TEST(ChatRobustness, MangledTemplatesFailCleanly) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\"|.:~ \n\\0aZ";
  int parsed = 0, failed = 0;
  for (const char* name : {"qwen2.5-instruct", "qwen3", "llama-3.1-instruct",
                           "deepseek-coder-instruct", "qwen3-coder"}) {
    const std::string source = load_fixture(name).source();
    for (int trial = 0; trial < 300; ++trial) {
      std::string s = source;
      for (int edit = 0; edit < 3; ++edit) {
        size_t at = rng() % (s.size() + 1);
        switch (rng() % 3) {
          case 0:
            s.erase(at, rng() % 8);
            break;
          case 1:
            s.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            s.insert(at, s.substr(at, rng() % 40));
            break;
        }
      }
      auto t = ChatTemplate::parse(s, {{"bos_token", "<s>"}});
      if (!t) {
        ++failed;
        EXPECT_EQ(t.status().exit_code(), 2) << t.status().message();
        continue;
      }
      ++parsed;
      auto r =
          t->render(Json::array({user("hi"), assistant("<think>a</think>b"), user("more")}), {});
      if (!r) {
        EXPECT_EQ(r.status().exit_code(), 2) << r.status().message();
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

// tojson(indent=k) for k <= 0 breaks lines without indenting, as Python's json.dumps does (the
// expected text is json.dumps({'a': 1, 'b': [1, 2]}, indent=-1), and the same for 0); a huge
// indent is refused instead of truncated to int.
TEST(ChatRender, TojsonIndentZeroOrLessBreaksLinesAsPythonDoes) {
  for (const char* k : {"-1", "0"}) {
    auto t = ChatTemplate::parse(
        std::string("{{ {'a': 1, 'b': [1, 2]} | tojson(indent=") + k + ") }}", {});
    ASSERT_TRUE(t) << t.status().message();
    auto r = t->render(Json::array(), {});
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->text, "{\n\"a\": 1,\n\"b\": [\n1,\n2\n]\n}") << "indent " << k;
  }
  auto huge = ChatTemplate::parse("{{ {'a': 1} | tojson(indent=4294967298) }}", {});
  ASSERT_TRUE(huge);
  EXPECT_FALSE(huge->render(Json::array(), {}));
}

TEST(ChatRobustness, DeepNestingAndHugeNumbersAreErrors) {
  auto deep = ChatTemplate::parse(
      "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", {});
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.status().code(), StatusCode::kUnsupported);
  std::string nots;
  for (int k = 0; k < 5000; ++k) nots += "not ";
  EXPECT_FALSE(ChatTemplate::parse("{{ " + nots + "x }}", {}));
  std::string ifs;
  for (int k = 0; k < 5000; ++k) ifs += "{% if x %}";
  EXPECT_FALSE(ChatTemplate::parse(ifs, {}));
  // A recursive macro whose body nests as deep as the parser allows: a render error, where the
  // C++ stack (about 550 bytes a level at -O2) would have run out before the macro limit.
  std::string deep_body;
  for (int k = 0; k < 240; ++k) deep_body += "not ";
  auto recursive = ChatTemplate::parse(
      "{% macro f(x) %}{{ " + deep_body + "f(x) }}{% endmacro %}{{ f(0) }}", {});
  ASSERT_TRUE(recursive) << recursive.status().message();
  auto rr = recursive->render(Json::array(), {});
  ASSERT_FALSE(rr);
  EXPECT_NE(rr.status().message().find("nested deeper than 1000 levels"), std::string::npos)
      << rr.status().message();
  EXPECT_FALSE(ChatTemplate::parse("{{ 99999999999999999999 }}", {}));
  EXPECT_FALSE(ChatTemplate::parse("{{ '\\ud83d' }}", {}));  // a lone surrogate
  auto escapes = ChatTemplate::parse("{{ '\\u00e9\\x41\\U0001F680\\n\\d' }}", {});
  ASSERT_TRUE(escapes);
  auto e = escapes->render(Json::array(), {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "\u00e9A\U0001F680\n\\d");  // Python keeps unknown escapes as written
  auto big = ChatTemplate::parse("{{ 3037000500 * 3037000500 }}", {});
  ASSERT_TRUE(big);
  EXPECT_FALSE(big->render(Json::array(), {}));
  auto pow = ChatTemplate::parse("{{ 2 ** 62 }} {{ 1 ** 4000000000000000000 }}", {});
  ASSERT_TRUE(pow);
  auto p = pow->render(Json::array(), {});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->text, "4611686018427387904 1");
  // The one 64-bit quotient past the range: an error, not the CPU's division trap (SIGFPE);
  // its remainder is Python's 0.
  auto floor_div = ChatTemplate::parse("{{ (-9223372036854775807 - 1) // -1 }}", {});
  ASSERT_TRUE(floor_div);
  auto q = floor_div->render(Json::array(), {});
  ASSERT_FALSE(q);
  EXPECT_NE(q.status().message().find("beyond 64 bits"), std::string::npos) << q.status().message();
  auto mod = ChatTemplate::parse("{{ (-9223372036854775807 - 1) % -1 }}", {});
  ASSERT_TRUE(mod);
  auto m = mod->render(Json::array(), {});
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->text, "0");
}

}  // namespace
}  // namespace leap::chat
