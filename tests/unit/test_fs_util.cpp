// Output paths checked before any work (common/fs_util.h): a folder that the run will create with
// its missing parents must have a writable existing ancestor; nothing is created by the check.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "common/fs_util.h"

namespace leap {
namespace {

namespace fs = std::filesystem;

class FsUtil : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("leap_fs_util_" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FsUtil, AFolderUnderAnExistingFolderCanBeCreated) {
  const fs::path deep = root_ / "exports" / "v3" / "policy";
  EXPECT_TRUE(check_folder_creatable(deep.string(), "sft.save_to").is_ok());
  EXPECT_TRUE(check_folder_creatable((root_ / "policy/").string(), "sft.save_to").is_ok());  // trailing slash
  EXPECT_FALSE(fs::exists(root_ / "exports"));  // the check creates nothing
  EXPECT_TRUE(check_folder_creatable("", "sft.save_to").is_ok());  // not asked for
}

TEST_F(FsUtil, AFileInTheWayIsRefusedNamingTheFlag) {
  std::ofstream(root_ / "file") << "x";
  const auto st = check_folder_creatable((root_ / "file" / "policy").string(), "sft.save_to");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.exit_code(), 2);
  EXPECT_NE(st.message().find("sft.save_to"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not a folder this process may write into"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace leap
