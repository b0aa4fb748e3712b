// CSV tables to tensors: one pass over the file, values checked against their column's type.
#include <charconv>
#include <fstream>

#include "keras/data/readers.h"

namespace keras::data {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

std::string line_where(const std::string& path, int64_t line) {
  return "CSV file '" + path + "', line " + std::to_string(line);
}

// Splits one line; quoted fields keep delimiters and "" stands for a quote. After a closing
// quote only spaces may come before the delimiter: `"a"b` is more likely a broken quote than data.
std::vector<std::string> split_fields(const std::string& line, char delim, const std::string& where) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == delim) {
      out.push_back(was_quoted ? cur : trim(cur));
      cur.clear();
      was_quoted = false;
    } else if (was_quoted) {
      if (c != ' ' && c != '\t')
        fail<IOError>(where, "a delimiter or the end of the line after the closing quote of field " + std::to_string(out.size() + 1),
                      std::string("'").append(line, i).append("'"), "Quotes inside a quoted field are written \"\".");
    } else if (c == '"' && trim(cur).empty()) {
      quoted = was_quoted = true;
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (quoted) fail<IOError>(where, "a closing quote", "end of line");
  out.push_back(was_quoted ? cur : trim(cur));
  return out;
}

struct Column {
  DType type = DType::float32;
  std::vector<double> f;
  std::vector<int64_t> i;
};

// std::from_chars, unlike strtod/strtoll, ignores LC_NUMERIC: "1.5" reads the same under a locale
// whose decimal point is a comma. It takes no leading '+', so one is dropped here.
void parse_value(const std::string& field, Column& col, const std::string& where, const std::string& col_name) {
  const std::string text = trim(field);
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
  if (is_integral(col.type)) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    bool range_ok = ec == std::errc() && (col.type == DType::int64 || (v >= INT32_MIN && v <= INT32_MAX));
    if (end != last || !range_ok)
      fail<IOError>(where, "an " + dtype_name(col.type) + " in column '" + col_name + "'", "'" + field + "'");
    col.i.push_back(v);
  } else {
    double v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (end != last || ec != std::errc())
      fail<IOError>(where, "a number in column '" + col_name + "'", "'" + field + "'",
                    ec == std::errc::result_out_of_range ? "The value is out of the range of float64." : "");
    col.f.push_back(v);
  }
}

Tensor column_tensor(const Column& col) {
  int64_t n = static_cast<int64_t>(is_integral(col.type) ? col.i.size() : col.f.size());
  Tensor t = Tensor::empty({n}, col.type, Device::cpu());
  dispatch_dtype(col.type, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t r = 0; r < n; ++r)
      p[r] = is_integral(col.type) ? static_cast<T>(col.i[r]) : static_cast<T>(col.f[r]);
  });
  return t;
}

}  // namespace

CsvData read_csv(const std::string& path, const CsvOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("read_csv", "a readable CSV file", "'" + path + "' (missing or unreadable)");
  for (DType t : o.column_types)
    if (t == DType::boolean)
      fail<ValueError>("read_csv('" + path + "')", "column_types of float32, float64, int32 or int64", "bool");

  std::vector<std::string> names;
  std::vector<Column> cols;
  std::string line;
  int64_t line_no = 0;
  int64_t rows = 0;
  auto setup = [&](size_t ncols) {
    if (!o.column_types.empty() && o.column_types.size() != ncols)
      fail<ValueError>("read_csv('" + path + "')", std::to_string(ncols) + " column_types (one per column)",
                       std::to_string(o.column_types.size()));
    cols.resize(ncols);
    for (size_t c = 0; c < ncols; ++c) cols[c].type = o.column_types.empty() ? DType::float32 : o.column_types[c];
    if (names.empty())
      for (size_t c = 0; c < ncols; ++c) names.push_back("column_" + std::to_string(c));
  };
  while (std::getline(in, line)) {
    ++line_no;
    // A UTF-8 byte-order mark (Excel writes one) would otherwise become part of the first name.
    if (line_no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    // CRLF files: the '\r' would otherwise stick to a quoted last field.
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const std::string where = line_where(path, line_no);
    auto fields = split_fields(line, o.delimiter, where);
    if (cols.empty()) {
      if (o.header) {
        names = fields;
        setup(fields.size());
        continue;
      }
      setup(fields.size());
    }
    ++rows;
    const std::string row_where = where + " (data row " + std::to_string(rows) + ")";
    if (fields.size() != cols.size())
      fail<IOError>(row_where, std::to_string(cols.size()) + " fields" + (o.header ? " as in the header" : " as in row 1"),
                    std::to_string(fields.size()) + " fields",
                    fields.size() < cols.size() ? "A field is missing; every row needs a value in every column."
                                                : "The row has extra fields.");
    for (size_t c = 0; c < cols.size(); ++c) {
      if (fields[c].empty())
        fail<IOError>(row_where, "a value in column '" + names[c] + "'", "an empty (missing) field");
      parse_value(fields[c], cols[c], row_where, names[c]);
    }
  }
  if (cols.empty() || rows == 0)
    fail<IOError>("read_csv", "a CSV file with data rows", "'" + path + "' with none");

  int64_t label = -1;
  if (!o.label_name.empty()) {
    for (size_t c = 0; c < names.size(); ++c)
      if (names[c] == o.label_name) label = static_cast<int64_t>(c);
    if (label < 0) {
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      fail<ValueError>("read_csv('" + path + "')", "label_name among the columns (" + all + ")", "'" + o.label_name + "'");
    }
  } else if (o.label_index >= 0) {
    if (o.label_index >= static_cast<int64_t>(cols.size()))
      fail<ValueError>("read_csv('" + path + "')", "label_index < " + std::to_string(cols.size()),
                       std::to_string(o.label_index));
    label = o.label_index;
  }

  CsvData out;
  std::vector<size_t> feats;
  for (size_t c = 0; c < cols.size(); ++c)
    if (static_cast<int64_t>(c) != label) feats.push_back(c);
  if (label >= 0) {
    out.labels = column_tensor(cols[static_cast<size_t>(label)]);
    out.label_name = names[static_cast<size_t>(label)];
  }
  DType ft = feats.empty() ? DType::float32 : cols[feats[0]].type;
  for (size_t c : feats)
    if (cols[c].type != ft) ft = DType::float32;
  const int64_t nf = static_cast<int64_t>(feats.size());
  out.features = Tensor::empty({rows, nf}, ft, Device::cpu());
  dispatch_dtype(ft, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.features.data<T>();
    for (int64_t j = 0; j < nf; ++j) {
      const Column& col = cols[feats[static_cast<size_t>(j)]];
      for (int64_t r = 0; r < rows; ++r)
        p[r * nf + j] = is_integral(col.type) ? static_cast<T>(col.i[r]) : static_cast<T>(col.f[r]);
    }
  });
  for (size_t c : feats) out.feature_names.push_back(names[c]);
  return out;
}

Dataset csv_dataset(const std::string& path, const CsvOptions& options) {
  CsvData d = read_csv(path, options);
  if (d.labels.defined()) return Dataset::from_tensor_slices({d.features, d.labels});
  return Dataset::from_tensor_slices({d.features});
}

}  // namespace keras::data
