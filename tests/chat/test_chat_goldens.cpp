// Every committed golden (jinja2's rendering, tests/chat/make_goldens.py) rendered by LEAP from
// the same tokenizer_config.json: the text byte for byte, or an error where jinja2 raised one.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace leap::chat {
namespace {

namespace fs = std::filesystem;
const fs::path kChatDir = fs::path(LEAP_SOURCE_DIR) / "tests" / "chat";

nlohmann::ordered_json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::ordered_json::parse(in);
}

// The first byte where two strings part, with context: a failure shows where, not two blobs.
std::string describe_difference(const std::string& want, const std::string& got) {
  size_t k = 0;
  while (k < want.size() && k < got.size() && want[k] == got[k]) ++k;
  size_t from = k < 40 ? 0 : k - 40;
  return "first difference at byte " + std::to_string(k) + "\n want: ..." + want.substr(from, 80) +
         "\n  got: ..." + got.substr(from, 80);
}

TEST(ChatGoldens, EveryTemplateMatchesJinja2) {
  int templates = 0, cases = 0;
  for (const auto& entry : fs::directory_iterator(kChatDir / "templates")) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    auto tmpl = load_template(entry.path().string());
    ASSERT_TRUE(tmpl) << tmpl.status().message();
    const auto golden = read_json(kChatDir / "goldens" / (name + ".json"));
    ++templates;
    for (const auto& c : golden["cases"]) {
      SCOPED_TRACE(c["name"].get<std::string>());
      RenderOptions opts;
      opts.add_generation_prompt = c["add_generation_prompt"].get<bool>();
      opts.now_unix_seconds = golden["now_unix_seconds"].get<std::int64_t>();
      opts.tools = c["tools"];
      for (const auto& [k, v] : c["variables"].items()) opts.variables[k] = v;
      auto r = tmpl->render(c["messages"], opts);
      ++cases;
      if (c.contains("error")) {
        EXPECT_FALSE(r) << "jinja2 failed with: " << c["error"].get<std::string>();
        if (!r) {
          EXPECT_EQ(r.status().exit_code(), 2) << r.status().message();
        }
        continue;
      }
      ASSERT_TRUE(r) << r.status().message();
      const std::string want = c["text"].get<std::string>();
      EXPECT_EQ(r->text, want) << describe_difference(want, r->text);
    }
  }
  EXPECT_EQ(templates, 7);
  EXPECT_GE(cases, 7 * 46);
}

}  // namespace
}  // namespace leap::chat
