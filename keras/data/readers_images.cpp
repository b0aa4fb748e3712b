// Images: decoding with stb_image (Debian libstb-dev, header-only) and a directory of class
// sub-folders as a Dataset (keras.utils.image_dataset_from_directory).
//
// Resizing is our own short loop rather than stb_image_resize: Keras resizes with
// tf.image.resize (half-pixel centres, no antialiasing), and matching its pixels matters more
// than a filter library's higher-quality downsampling.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "backend/random.h"
#include "keras/data/readers.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC  // private copies: no clash with other libraries exporting stbi_*
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace keras::data {

namespace fs = std::filesystem;

Tensor load_image(const std::string& path, int channels) {
  const std::string where = "image file '" + path + "'";
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4)
    fail<ValueError>(where, "channels 0, 1, 3 or 4", std::to_string(channels));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>(where, "a readable file", "a missing or unreadable file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int w = 0, h = 0, stored = 0;
  // stbi keeps its failure reason per thread, so decoding on map workers is safe.
  stbi_uc* pixels = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), static_cast<int>(bytes.size()),
                                          &w, &h, &stored, channels);
  if (!pixels) {
    const char* why = stbi_failure_reason();
    fail<IOError>(where, "a decodable PNG, JPEG, BMP or GIF image",
                  std::string("undecodable data (") + (why ? why : "unknown reason") + ")",
                  "The file is corrupt, truncated or of another format.");
  }
  const int c = channels ? channels : stored;
  Tensor t = Tensor::empty({h, w, c}, DType::float32, Device::cpu());
  float* dst = t.data<float>();
  const size_t n = static_cast<size_t>(h) * static_cast<size_t>(w) * static_cast<size_t>(c);
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(pixels[i]);
  stbi_image_free(pixels);
  return t;
}

namespace {

// tf.image.resize source coordinates: half-pixel centres, clamped to the image.
struct Tap {
  int64_t lo, hi;
  float frac;
};
std::vector<Tap> taps(int64_t in, int64_t out, bool nearest) {
  std::vector<Tap> t(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t i = 0; i < out; ++i) {
    if (nearest) {
      int64_t s = std::min<int64_t>(static_cast<int64_t>(std::floor((static_cast<double>(i) + 0.5) * scale)), in - 1);
      t[static_cast<size_t>(i)] = {s, s, 0.f};
      continue;
    }
    const double src = (static_cast<double>(i) + 0.5) * scale - 0.5;
    const double f = std::floor(src);
    t[static_cast<size_t>(i)] = {std::max<int64_t>(static_cast<int64_t>(f), 0),
                                 std::min<int64_t>(static_cast<int64_t>(std::ceil(src)), in - 1),
                                 static_cast<float>(src - f)};
  }
  return t;
}

}  // namespace

Tensor resize_image(const Tensor& image, int64_t height, int64_t width, const std::string& interpolation) {
  const std::string where = "resize_image";
  if (interpolation != "bilinear" && interpolation != "nearest")
    fail<ValueError>(where, "interpolation 'bilinear' or 'nearest'", "'" + interpolation + "'");
  if (height < 1 || width < 1)
    fail<ValueError>(where, "a size of at least 1x1", std::to_string(height) + "x" + std::to_string(width));
  if (image.rank() != 3 && image.rank() != 4)
    fail<ShapeError>(where, "an image (h, w, c) or a batch (n, h, w, c)", shape_str(image.shape()));
  if (image.dtype() != DType::float32) fail<TypeError>(where, "a float32 image", dtype_name(image.dtype()));
  const bool batched = image.rank() == 4;
  Tensor src = image.detach().contiguous().to(Device::cpu());
  const int64_t n = batched ? src.dim(0) : 1, ih = src.dim(-3), iw = src.dim(-2), c = src.dim(-1);
  Shape out_shape = batched ? Shape{n, height, width, c} : Shape{height, width, c};
  Tensor out = Tensor::empty(out_shape, DType::float32, Device::cpu());
  const bool nearest = interpolation == "nearest";
  const auto ty = taps(ih, height, nearest), tx = taps(iw, width, nearest);
  const float* s = src.data<float>();
  float* d = out.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    const float* img = s + b * ih * iw * c;
    for (int64_t y = 0; y < height; ++y) {
      const Tap& yt = ty[static_cast<size_t>(y)];
      const float* top = img + yt.lo * iw * c;
      const float* bot = img + yt.hi * iw * c;
      float* row = d + ((b * height + y) * width) * c;
      for (int64_t x = 0; x < width; ++x) {
        const Tap& xt = tx[static_cast<size_t>(x)];
        for (int64_t k = 0; k < c; ++k) {
          const float tl = top[xt.lo * c + k], tr = top[xt.hi * c + k];
          const float bl = bot[xt.lo * c + k], br = bot[xt.hi * c + k];
          const float t = tl + (tr - tl) * xt.frac, bo = bl + (br - bl) * xt.frac;
          row[x * c + k] = t + (bo - t) * yt.frac;
        }
      }
    }
  }
  return out;
}

namespace {

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".gif";
}

// Image files under `dir`, recursively, sorted by path for a stable order. The name is checked
// first so that only image entries are stat'ed (a broken link named notes.txt is no error).
std::vector<std::string> list_images(const fs::path& dir, bool follow_links) {
  std::vector<std::string> out;
  auto opts = follow_links ? fs::directory_options::follow_directory_symlink : fs::directory_options::none;
  for (auto it = fs::recursive_directory_iterator(dir, opts); it != fs::recursive_directory_iterator(); ++it)
    if (is_image_file(it->path()) && it->is_regular_file()) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Listing {
  std::vector<std::string> class_names;
  std::vector<std::string> paths;
  std::vector<int32_t> labels;  // class index of each path; empty without labels
};

// The class sub-folders (labels "inferred") and the image files. May throw fs::filesystem_error.
Listing list_directory(const std::string& directory, const ImageDirectoryOptions& o, const std::string& where) {
  Listing out;
  if (!fs::is_directory(directory))
    fail<IOError>(where, "an existing directory", fs::exists(directory) ? "a path that is not a directory" : "a missing path");
  if (o.labels != "inferred") {
    out.paths = list_images(directory, o.follow_links);
    return out;
  }
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(directory))
    if (e.is_directory()) found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  if (!o.class_names.empty()) {
    std::vector<std::string> sorted_given = o.class_names;
    std::sort(sorted_given.begin(), sorted_given.end());
    if (sorted_given != found) {
      std::string f;
      for (const auto& s : found) f += (f.empty() ? "" : ", ") + s;
      fail<ValueError>(where, "class_names naming exactly the sub-folders (" + f + ")",
                       std::to_string(o.class_names.size()) + " other names");
    }
    found = o.class_names;
  }
  out.class_names = found;
  for (size_t k = 0; k < found.size(); ++k)
    for (auto& p : list_images(fs::path(directory) / found[k], o.follow_links)) {
      out.paths.push_back(std::move(p));
      out.labels.push_back(static_cast<int32_t>(k));
    }
  return out;
}

}  // namespace

ImageDirectory image_dataset_from_directory(const std::string& directory, const ImageDirectoryOptions& o) {
  const std::string where = "image_dataset_from_directory('" + directory + "')";
  if (o.labels != "inferred" && o.labels != "none")
    fail<ValueError>(where, "labels 'inferred' or 'none'", "'" + o.labels + "'");
  if (o.label_mode != "int" && o.label_mode != "categorical" && o.label_mode != "binary" && !o.label_mode.empty())
    fail<ValueError>(where, "label_mode 'int', 'categorical', 'binary' or ''", "'" + o.label_mode + "'");
  int channels = o.color_mode == "grayscale" ? 1 : o.color_mode == "rgb" ? 3 : o.color_mode == "rgba" ? 4 : 0;
  if (!channels) fail<ValueError>(where, "color_mode 'grayscale', 'rgb' or 'rgba'", "'" + o.color_mode + "'");
  if (o.batch_size < 0) fail<ValueError>(where, "batch_size >= 0 (0: unbatched)", std::to_string(o.batch_size));
  if (o.height < 1 || o.width < 1)
    fail<ValueError>(where, "an image size of at least 1x1", std::to_string(o.height) + "x" + std::to_string(o.width));
  if (o.interpolation != "bilinear" && o.interpolation != "nearest")
    fail<ValueError>(where, "interpolation 'bilinear' or 'nearest'", "'" + o.interpolation + "'");
  if (o.validation_split < 0 || o.validation_split >= 1)
    fail<ValueError>(where, "validation_split in [0, 1)", std::to_string(o.validation_split));
  if (o.validation_split > 0 && o.subset != "training" && o.subset != "validation")
    fail<ValueError>(where, "subset 'training' or 'validation' with a validation_split", "'" + o.subset + "'");
  if (o.validation_split == 0 && !o.subset.empty())
    fail<ValueError>(where, "no subset without a validation_split", "subset '" + o.subset + "'");
  if (o.validation_split > 0 && o.shuffle && !o.seed)
    fail<ValueError>(where, "a seed with validation_split and shuffle", "none",
                     "Both subsets must come from the same shuffle: pass the same .seed to both calls.");

  const bool labelled = o.labels == "inferred";
  Listing listing;
  try {
    listing = list_directory(directory, o, where);
  } catch (const fs::filesystem_error& e) {  // unreadable folder, symlink loop, ...
    fail<IOError>(where, "a directory tree that can be listed",
                  "'" + e.path1().string() + "' (" + e.code().message() + ")",
                  "Check the permissions and links under the directory.");
  }
  std::vector<std::string> class_names = std::move(listing.class_names);
  std::vector<std::string> paths = std::move(listing.paths);
  std::vector<int32_t> labels = std::move(listing.labels);
  if (labelled && o.label_mode == "binary" && class_names.size() != 2)
    fail<ValueError>(where, "exactly 2 classes for label_mode 'binary'", std::to_string(class_names.size()) + " classes");
  if (paths.empty())
    fail<ValueError>(where, "image files (.png, .jpg, .jpeg, .bmp, .gif)" + std::string(labelled ? " in class sub-folders" : ""),
                     "none");

  const uint64_t seed = o.seed ? *o.seed : global_generator().next_seed();
  if (o.shuffle) {  // one fixed permutation of the files, so both subsets split the same order
    Generator gen(seed);
    for (size_t i = paths.size() - 1; i > 0; --i) {
      uint32_t w[4];
      philox4x32(gen.seed(), gen.advance(1), w);
      size_t j = static_cast<size_t>(((static_cast<uint64_t>(w[0]) << 32) | w[1]) % (i + 1));
      std::swap(paths[i], paths[j]);
      if (labelled) std::swap(labels[i], labels[j]);
    }
  }
  if (o.validation_split > 0) {
    const auto n_val = static_cast<size_t>(o.validation_split * static_cast<double>(paths.size()));
    const size_t cut = paths.size() - n_val;
    if (o.subset == "training") {
      paths.resize(cut);
      if (labelled) labels.resize(cut);
    } else {
      paths.erase(paths.begin(), paths.begin() + static_cast<std::ptrdiff_t>(cut));
      if (labelled) labels.erase(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(cut));
    }
    if (paths.empty()) fail<ValueError>(where, "a validation_split leaving files in subset '" + o.subset + "'", "none");
  }

  // Indices flow through the pipeline; decoding happens lazily on the map workers.
  const auto num_classes = static_cast<int64_t>(class_names.size());
  auto shared_paths = std::make_shared<const std::vector<std::string>>(paths);
  auto shared_labels = std::make_shared<const std::vector<int32_t>>(labels);
  const bool with_labels = labelled && !o.label_mode.empty();
  const std::string mode = o.label_mode, interp = o.interpolation;
  const int64_t h = o.height, w = o.width;
  MapFn load = [=](const Element& e) -> Element {
    const auto i = static_cast<size_t>(e[0].item());
    Tensor img = resize_image(load_image((*shared_paths)[i], channels), h, w, interp);
    if (!with_labels) return {img};
    const int32_t lab = (*shared_labels)[i];
    Tensor y;
    if (mode == "int") {
      y = Tensor::scalar(lab, DType::int32, Device::cpu());
    } else if (mode == "binary") {
      y = Tensor::full({1}, lab, DType::float32, Device::cpu());
    } else {
      y = Tensor::zeros({num_classes}, DType::float32, Device::cpu());
      y.data<float>()[lab] = 1.f;
    }
    return {img, y};
  };
  Dataset ds = Dataset::range(static_cast<int64_t>(paths.size()));
  if (o.shuffle) ds = ds.shuffle(static_cast<int64_t>(paths.size()), seed);
  ds = ds.map(load, o.num_parallel_calls);
  if (o.batch_size > 0) ds = ds.batch(o.batch_size);
  return ImageDirectory{ds.prefetch(AUTOTUNE), class_names, paths};
}

}  // namespace keras::data
