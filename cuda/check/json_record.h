// JsonRecord: a flat JSON object of named figures and strings, for the check program's results
// (RESULTS_DIR/*.json). The GPU-only build may lack a JSON library, and these records are flat,
// so a few lines of escaping are all that is needed.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace leap::cuda::check {

class JsonRecord {
 public:
  JsonRecord& set(const std::string& key, const std::string& value) {
    fields_.emplace_back(key, quote(value));
    return *this;
  }
  JsonRecord& set(const std::string& key, const char* value) {
    return set(key, std::string(value));
  }
  JsonRecord& set(const std::string& key, double value) {
    char buf[64];
    if (std::isfinite(value)) {
      std::snprintf(buf, sizeof buf, "%.9g", value);
    } else {
      std::snprintf(buf, sizeof buf, "null");  // JSON has no NaN or infinity
    }
    fields_.emplace_back(key, buf);
    return *this;
  }
  JsonRecord& set(const std::string& key, long long value) {
    fields_.emplace_back(key, std::to_string(value));
    return *this;
  }
  JsonRecord& set(const std::string& key, int value) {
    return set(key, static_cast<long long>(value));
  }
  JsonRecord& set(const std::string& key, bool value) {
    fields_.emplace_back(key, value ? "true" : "false");
    return *this;
  }
  // A nested record, e.g. one per op.
  JsonRecord& set(const std::string& key, const JsonRecord& value) {
    fields_.emplace_back(key, value.str());
    return *this;
  }
  // A check whose figures are outside its tolerance: the record is still printed, and the
  // program exits 1.
  JsonRecord& mark_failed() {
    failed_ = true;
    return set("pass", false);
  }
  bool failed() const { return failed_; }
  std::string str() const {
    std::string out = "{";
    for (size_t i = 0; i < fields_.size(); ++i) {
      out += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
    }
    return out + "}";
  }

 private:
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  std::vector<std::pair<std::string, std::string>> fields_;
  bool failed_ = false;
};

}  // namespace leap::cuda::check
