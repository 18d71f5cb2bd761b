// A table of numbers and words rendered as aligned text, CSV or JSON, so that every output format
// of `leap analyze` shows the same cells. NaN is "-" in text, empty in CSV and null in JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace leap::app {

using Cell = std::variant<int64_t, double, std::string>;

struct Column {
  std::string name;    // JSON key and CSV header
  std::string title;   // text header
  int precision = -1;  // decimals of a double in text (JSON and CSV keep full precision)
  std::string block;   // text: columns of one block print together, the first column leading each
  bool text_skip_zero = false;  // text: left out when every cell is 0
  bool percent = false;         // text: a fraction shown as a percentage
};

struct Table {
  std::string name;   // JSON key
  std::string title;  // text heading
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  // each as long as columns
};

// Aligned columns under a heading; a table whose columns name several blocks prints one block
// after another, each led by the first column, so that wide tables stay readable.
std::string render_text(const Table& t);
// "name: value" lines of the first row, for a one-row table of facts.
std::string render_text_vertical(const Table& t);
std::string render_csv(const Table& t);
nlohmann::ordered_json rows_to_json(const Table& t);  // an array of objects keyed by column name

}  // namespace leap::app
