#include "keras/debugging/dump_reader.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "keras/data/readers.h"
#include "keras/utils/file_util.h"

namespace keras::debugging {
namespace fs = std::filesystem;

namespace {

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += (i ? "  " : "") + (i + 1 < r.size() ? pad(r[i], width[i]) : r[i]);
    out += line + "\n";
  }
  return out;
}

template <class T>
void diff_typed(const T* a, const T* b, int64_t n, const CompareOptions& o, TensorDiff& d) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    if (std::isnan(x) || std::isnan(y)) {
      d.mismatched += std::isnan(x) != std::isnan(y);
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      d.mismatched += x != y;
      continue;
    }
    const double e = std::abs(x - y);
    d.max_abs = std::max(d.max_abs, e);
    if (y != 0) d.max_rel = std::max(d.max_rel, e / std::abs(y));
    d.mismatched += e > o.atol + o.rtol * std::abs(y);
  }
}

}  // namespace

std::string DumpEntry::key() const {
  std::string k = name + " @ " + (mode.empty() ? "eager" : mode);
  if (epoch >= 0) k += " epoch " + std::to_string(epoch);
  if (step >= 0) k += " step " + std::to_string(step);
  return k;
}

std::vector<DumpEntry> read_dump_index(const std::string& dir) {
  const std::string path = (fs::path(dir) / "index.json").string();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file_bytes(path));
  } catch (const nlohmann::json::exception& e) {
    fail<IOError>("tensor dump index '" + path + "'", "JSON", std::string("a parse error: ") + e.what());
  }
  if (!doc.is_object() || doc.value("format", "") != "keras-tensor-dump" || !doc.contains("tensors") ||
      !doc["tensors"].is_array())
    fail<IOError>("tensor dump index '" + path + "'", "a keras-tensor-dump index with a 'tensors' list",
                  "another document", "Point at a folder written by keras::debugging::dump.");
  std::vector<DumpEntry> out;
  size_t i = 0;
  for (const auto& t : doc["tensors"]) {
    try {
      DumpEntry e;
      e.name = t.at("name").get<std::string>();
      e.layer = t.at("layer").get<std::string>();
      e.class_name = t.value("class_name", "");
      e.kind = t.at("kind").get<std::string>();
      e.index = t.at("index").get<int>();
      e.call = t.value("call", 0);
      e.mode = t.at("mode").get<std::string>();
      e.epoch = t.at("epoch").get<int>();
      e.step = t.at("step").get<int64_t>();
      e.shape = t.at("shape").get<Shape>();
      e.dtype = t.at("dtype").get<std::string>();
      e.file = t.at("file").get<std::string>();
      out.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      fail<IOError>("tensor dump index '" + path + "', entry " + std::to_string(i), "name, layer, kind, index, mode, "
                    "epoch, step, shape, dtype and file", std::string("an incomplete entry (") + ex.what() + ")");
    }
    ++i;
  }
  return out;
}

Tensor load_dump_tensor(const std::string& dir, const DumpEntry& e) {
  const std::string path = (fs::path(dir) / e.file).string();
  Tensor t = data::load_npy(path);
  if (t.shape() != e.shape || dtype_name(t.dtype()) != e.dtype)
    fail<IOError>("tensor dump file '" + path + "'", "the index's " + e.dtype + " " + shape_str(e.shape),
                  dtype_name(t.dtype()) + " " + shape_str(t.shape()), "The file does not belong to this index.");
  return t;
}

std::string list_dump(const std::string& dir) {
  std::vector<std::vector<std::string>> rows{{"tensor", "shape", "dtype", "min", "max", "mean", "std", "NaN", "Inf"}};
  for (const auto& e : read_dump_index(dir)) {
    const TensorStats s = tensor_stats(load_dump_tensor(dir, e));
    rows.push_back({e.key(), shape_str(e.shape), e.dtype, format_number(s.min), format_number(s.max),
                    format_number(s.mean), format_number(s.std), std::to_string(s.nan), std::to_string(s.inf())});
  }
  return table(rows) + std::to_string(rows.size() - 1) + " tensors in " + dir + "\n";
}

bool DumpComparison::all_equal() const {
  for (const auto& t : tensors)
    if (!t.ok()) return false;
  return true;
}

std::string DumpComparison::str() const {
  std::vector<std::vector<std::string>> rows{{"tensor", "status", "max_abs", "max_rel", "mismatched"}};
  int64_t bad = 0, differ = 0, missing = 0;
  for (const auto& t : tensors) {
    bad += !t.ok();
    differ += t.status == "differ";
    missing += t.status.rfind("missing", 0) == 0;
    const bool compared = t.status == "equal" || t.status == "differ";
    rows.push_back({t.key, t.status + (t.detail.empty() ? "" : " (" + t.detail + ")"),
                    compared ? format_number(t.max_abs) : "-", compared ? format_number(t.max_rel) : "-",
                    compared ? std::to_string(t.mismatched) + "/" + std::to_string(t.size) : "-"});
  }
  std::string last = "all " + std::to_string(tensors.size()) + " tensors match";
  if (bad)
    last = std::to_string(bad) + " of " + std::to_string(tensors.size()) + " tensors do not match: " +
           std::to_string(differ) + " differ, " + std::to_string(missing) + " missing, " +
           std::to_string(bad - differ - missing) + " with another shape or dtype";
  return table(rows) + last + "\n";
}

DumpComparison compare_dumps(const std::string& dir_a, const std::string& dir_b, const CompareOptions& o) {
  const auto a = read_dump_index(dir_a), b = read_dump_index(dir_b);
  std::map<std::string, const DumpEntry*> in_b;
  for (const auto& e : b) in_b.emplace(e.key(), &e);
  DumpComparison out;
  std::map<std::string, bool> seen;
  for (const auto& ea : a) {
    TensorDiff d;
    d.key = ea.key();
    seen[d.key] = true;
    auto it = in_b.find(d.key);
    if (it == in_b.end()) {
      d.status = "missing in B";
    } else if (ea.dtype != it->second->dtype) {
      d.status = "dtype mismatch";
      d.detail = ea.dtype + " vs " + it->second->dtype;
    } else if (ea.shape != it->second->shape) {
      d.status = "shape mismatch";
      d.detail = shape_str(ea.shape) + " vs " + shape_str(it->second->shape);
    } else {
      const Tensor ta = load_dump_tensor(dir_a, ea), tb = load_dump_tensor(dir_b, *it->second);
      d.size = ta.numel();
      dispatch_dtype(ta.dtype(), [&](auto tag) {
        using T = decltype(tag);
        diff_typed<T>(static_cast<const T*>(ta.raw_data()), static_cast<const T*>(tb.raw_data()), ta.numel(), o, d);
      });
      d.status = d.mismatched ? "differ" : "equal";
    }
    out.tensors.push_back(std::move(d));
  }
  for (const auto& eb : b)
    if (!seen.count(eb.key())) {
      TensorDiff d;
      d.key = eb.key();
      d.status = "missing in A";
      out.tensors.push_back(std::move(d));
    }
  return out;
}

}  // namespace keras::debugging
