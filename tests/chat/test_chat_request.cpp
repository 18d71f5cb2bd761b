// The conversation file `leap tokenize --chat` reads, rendered with a fixture's template and
// printed as JSON spans; malformed files are named errors with exit code 2.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "chat/chat_request.h"

namespace leap::chat {
namespace {

namespace fs = std::filesystem;
const fs::path kChatDir = fs::path(LEAP_SOURCE_DIR) / "tests" / "chat";

class ChatFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("leap_chat_request_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json");
  }
  void TearDown() override { fs::remove(path_); }
  void write(const std::string& text) { std::ofstream(path_) << text; }
  fs::path path_;
};

TEST_F(ChatFile, ListFormRendersLikeTheGolden) {
  write(R"([{"role": "system", "content": "You are a CUDA expert."},
            {"role": "user", "content": "Write a ReLU kernel."}])");
  auto r =
      render_chat_file((kChatDir / "templates" / "qwen2.5-instruct").string(), path_.string(), 0);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->text,
            "<|im_start|>system\nYou are a CUDA expert.<|im_end|>\n<|im_start|>user\nWrite a ReLU "
            "kernel.<|im_end|>\n"
            "<|im_start|>assistant\n");
  nlohmann::ordered_json j = rendering_to_json(*r);
  EXPECT_EQ(j["text"], r->text);
  ASSERT_GE(j["spans"].size(), 3u);
  EXPECT_EQ(j["spans"][0]["kind"], "template");
  EXPECT_EQ(j["spans"][0]["text"],
            "<|im_start|>system\n");  // the system branch writes its role itself
  EXPECT_EQ(j["spans"][1]["kind"], "content");
  EXPECT_EQ(j["spans"][1]["text"], "You are a CUDA expert.");
  std::string joined;
  for (const auto& s : j["spans"]) joined += s["text"].get<std::string>();
  EXPECT_EQ(joined, r->text);
}

TEST_F(ChatFile, ObjectFormCarriesOptions) {
  write(R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": false,
            "variables": {"date_string": "02 Feb 2031"}})");
  auto r =
      render_chat_file((kChatDir / "templates" / "llama-3.1-instruct").string(), path_.string(), 0);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_NE(r->text.find("Today Date: 02 Feb 2031"), std::string::npos);
  EXPECT_EQ(r->text.substr(r->text.size() - 12), "hi<|eot_id|>");
}

TEST_F(ChatFile, MalformedFilesAreNamedErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([{"content": "x"}])", "message 0 has no string \"role\""},
      {R"({"messages": [], "temperature": 1})", "unknown key \"temperature\""},
      {R"({"messages": {}})", "\"messages\" must be a list"},
      {R"([1])", "message 0 is not an object"},
      {"[", "not valid JSON"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    write(text);
    auto r = read_chat_request(path_.string(), 0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().exit_code(), 2);
    EXPECT_NE(r.status().message().find(path_.string()), std::string::npos);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace leap::chat
