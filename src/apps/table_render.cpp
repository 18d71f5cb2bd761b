// Text, CSV and JSON renderings of a Table.
#include "apps/table_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace leap::app {

namespace {

std::string text_cell(const Cell& c, const Column& col) {
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&c)) {
    if (!std::isfinite(*d)) return "-";
    if (col.percent) return fmt::format("{:.{}f}%", 100.0 * *d, std::max(0, col.precision));
    return col.precision >= 0 ? fmt::format("{:.{}f}", *d, col.precision) : fmt::format("{}", *d);
  }
  return std::get<std::string>(c);
}

bool is_zero(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return *i == 0;
  if (const auto* d = std::get_if<double>(&c)) return *d == 0;
  return false;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// Column indices per text block, in first-appearance order; the first column leads every block.
std::vector<std::vector<size_t>> text_blocks(const Table& t) {
  std::vector<std::string> names;
  std::vector<std::vector<size_t>> blocks;
  for (size_t c = 1; c < t.columns.size(); ++c) {
    const Column& col = t.columns[c];
    if (col.text_skip_zero &&
        std::all_of(t.rows.begin(), t.rows.end(), [&](const auto& r) { return is_zero(r[c]); }))
      continue;
    auto it = std::find(names.begin(), names.end(), col.block);
    if (it == names.end()) {
      names.push_back(col.block);
      blocks.push_back({0});
      it = names.end() - 1;
    }
    blocks[static_cast<size_t>(it - names.begin())].push_back(c);
  }
  if (blocks.empty()) blocks.push_back({0});
  return blocks;
}

}  // namespace

std::string render_text(const Table& t) {
  std::string out = t.title + "\n";
  const auto blocks = text_blocks(t);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto& cols = blocks[b];
    std::vector<std::vector<std::string>> cells(t.rows.size());
    std::vector<size_t> width;
    for (size_t c : cols) width.push_back(t.columns[c].title.size());
    for (size_t r = 0; r < t.rows.size(); ++r)
      for (size_t k = 0; k < cols.size(); ++k) {
        cells[r].push_back(text_cell(t.rows[r][cols[k]], t.columns[cols[k]]));
        width[k] = std::max(width[k], cells[r].back().size());
      }
    if (b > 0) out += "\n";
    if (blocks.size() > 1) out += "  " + t.columns[cols[1]].block + ":\n";
    // Words are left-aligned, numbers right-aligned.
    const bool label = !t.rows.empty() && std::holds_alternative<std::string>(t.rows[0][0]);
    auto line = [&](auto cell_of) {
      std::string l;
      for (size_t k = 0; k < cols.size(); ++k)
        l += k == 0 && label ? fmt::format("  {:<{}}", cell_of(k), width[k])
                             : fmt::format("  {:>{}}", cell_of(k), width[k]);
      l.erase(l.find_last_not_of(' ') + 1);
      return l + "\n";
    };
    out += line([&](size_t k) { return t.columns[cols[k]].title; });
    for (const auto& row : cells) out += line([&](size_t k) { return row[k]; });
  }
  return out;
}

std::string render_text_vertical(const Table& t) {
  std::string out = t.title + "\n";
  if (t.rows.empty()) return out;
  size_t width = 0;
  for (const auto& c : t.columns) width = std::max(width, c.title.size());
  for (size_t c = 0; c < t.columns.size(); ++c)
    out += fmt::format("  {:<{}}  {}\n", t.columns[c].title + ":", width + 1,
                       text_cell(t.rows[0][c], t.columns[c]));
  return out;
}

std::string render_csv(const Table& t) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) out += ',';
    out += csv_field(t.columns[c].name);
  }
  out += "\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      std::string v;
      if (const auto* i = std::get_if<int64_t>(&row[c]))
        v = std::to_string(*i);
      else if (const auto* d = std::get_if<double>(&row[c]))
        v = std::isfinite(*d) ? fmt::format("{}", *d) : "";
      else
        v = csv_field(std::get<std::string>(row[c]));
      if (c) out += ',';
      out += v;
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json rows_to_json(const Table& t) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& row : t.rows) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string& key = t.columns[c].name;
      if (const auto* i = std::get_if<int64_t>(&row[c]))
        obj[key] = *i;
      else if (const auto* d = std::get_if<double>(&row[c]))
        obj[key] = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(nullptr);
      else
        obj[key] = std::get<std::string>(row[c]);
    }
    out.push_back(std::move(obj));
  }
  return out;
}

}  // namespace leap::app
