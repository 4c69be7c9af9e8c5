// Data-set look-up (explicit dir, $ANASIM_DATA, defaults) and loading of one split into an Eigen matrix.
// ANASIM_SOURCE_DIR (the repository root) is a compile definition set by CMake.
#include "nn/dataset.hpp"
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include "nn/idx.hpp"

namespace anasim::nn {

namespace fs = std::filesystem;

namespace {

const char* dir_name(DatasetKind kind) { return kind == DatasetKind::Mnist ? "mnist" : "fashion-mnist"; }

const char* prefix(Split s) { return s == Split::Train ? "train" : "t10k"; }

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// "<dir>/<base>.gz" if present, else "<dir>/<base>", else empty.
std::string find_file(const fs::path& dir, const std::string& base) {
  if (is_file(dir / (base + ".gz"))) return (dir / (base + ".gz")).string();
  if (is_file(dir / base)) return (dir / base).string();
  return {};
}

std::vector<std::string> needed_files(bool need_train) {
  std::vector<std::string> f;
  if (need_train) f = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
  f.push_back("t10k-images-idx3-ubyte");
  f.push_back("t10k-labels-idx1-ubyte");
  return f;
}

// The files of `need` missing from `dir`; empty if all are there.
std::vector<std::string> missing_in(const fs::path& dir, const std::vector<std::string>& need) {
  std::vector<std::string> miss;
  for (const auto& base : need)
    if (find_file(dir, base).empty()) miss.push_back(base + "[.gz]");
  return miss;
}

}  // namespace

Status parse_dataset_kind(const std::string& name, DatasetKind& kind) {
  if (name == "mnist" || name == "MNIST") {
    kind = DatasetKind::Mnist;
    return Status::success();
  }
  if (name == "fashion-mnist" || name == "fashion" || name == "Fashion-MNIST") {
    kind = DatasetKind::FashionMnist;
    return Status::success();
  }
  return Status::input(fmt::format("unknown data set '{}' (expected mnist or fashion-mnist)", name));
}

const char* dataset_name(DatasetKind kind) { return kind == DatasetKind::Mnist ? "MNIST" : "Fashion-MNIST"; }

std::vector<DataDirCandidate> default_data_dirs(DatasetKind kind) {
  const std::string name = dir_name(kind);
  std::vector<DataDirCandidate> c;
#ifdef ANASIM_SOURCE_DIR
  const fs::path repo = ANASIM_SOURCE_DIR;
  c.push_back({(repo / "data" / name).string(), "default: <repo>/data/" + name});
#endif
  c.push_back({(fs::path("..") / "shared" / name).string(), "default: ../shared/" + name + " from the current directory"});
#ifdef ANASIM_SOURCE_DIR
  c.push_back({(repo / ".." / "shared" / name).lexically_normal().string(), "default: <repo>/../shared/" + name});
#endif
  c.push_back({"/usr/share/datasets/" + name, "default"});
  return c;
}

std::vector<DataDirCandidate> data_dir_candidates(DatasetKind kind, const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return {{explicit_dir, "--data"}};
  if (const char* env = std::getenv("ANASIM_DATA"); env && *env) return {{env, "ANASIM_DATA"}};
  return default_data_dirs(kind);
}

Status find_data_dir_in(const std::vector<DataDirCandidate>& candidates, DatasetKind kind, bool need_train,
                        std::string& dir) {
  const auto need = needed_files(need_train);
  std::string looked;
  for (const auto& c : candidates) {
    const fs::path d(c.dir);
    std::string why;
    if (!is_dir(d)) {
      why = "no such directory";
    } else {
      auto miss = missing_in(d, need);
      if (miss.empty()) {
        dir = d.string();
        return Status::success();
      }
      const fs::path sub = d / dir_name(kind);  // a parent such as /usr/share/datasets
      if (is_dir(sub) && missing_in(sub, need).empty()) {
        dir = sub.string();
        return Status::success();
      }
      why = fmt::format("missing {}", fmt::join(miss, ", "));
    }
    looked += fmt::format("\n  {} ({}): {}", c.dir, c.origin, why);
  }
  return Status::input(fmt::format(
      "cannot find the {} data set (IDX files {}). Looked in:{}\n"
      "Point at a copy with --data DIR or the ANASIM_DATA environment variable.",
      dataset_name(kind), fmt::format("{}[.gz]", fmt::join(need, "[.gz], ")), looked));
}

Status find_data_dir(DatasetKind kind, const std::string& explicit_dir, bool need_train, std::string& dir) {
  return find_data_dir_in(data_dir_candidates(kind, explicit_dir), kind, need_train, dir);
}

Status split_files(const std::string& dir, Split split, std::string& images, std::string& labels) {
  const std::string ib = fmt::format("{}-images-idx3-ubyte", prefix(split));
  const std::string lb = fmt::format("{}-labels-idx1-ubyte", prefix(split));
  images = find_file(dir, ib);
  labels = find_file(dir, lb);
  if (images.empty() || labels.empty())
    return Status::input(fmt::format("{}: no {}[.gz] in this directory", dir, images.empty() ? ib : lb));
  return Status::success();
}

Status load_split(const std::string& dir, Split split, Dataset& out) {
  out = Dataset{};
  std::string ip, lp;
  if (Status st = split_files(dir, split, ip, lp); !st) return st;
  IdxImages img;
  if (Status st = read_idx_images(ip, img); !st) return st;
  std::vector<std::uint8_t> lab;
  if (Status st = read_idx_labels(lp, lab); !st) return st;
  if (static_cast<std::size_t>(img.count) != lab.size()) {
    const SourceLoc loc = SourceLoc::whole(lp);
    return Status::input(fmt::format("{} labels, but {} has {} images", lab.size(), ip, img.count), loc);
  }
  for (std::size_t i = 0; i < lab.size(); ++i)
    if (lab[i] > 9) {
      const SourceLoc loc = SourceLoc::whole(lp);
      return Status::input(fmt::format("label {} of item {} is outside 0..9", int{lab[i]}, i), loc);
    }
  if (img.count == 0)
    return Status::input(fmt::format("{} holds no images (the IDX header's count is 0)", ip), SourceLoc::whole(ip));
  const int n = img.count, d = img.rows * img.cols;
  out.images = Eigen::Map<const MatrixRf>(img.pixels.data(), n, d);
  out.labels.assign(lab.begin(), lab.end());
  out.rows = img.rows;
  out.cols = img.cols;
  out.images_path = ip;
  out.labels_path = lp;
  return Status::success();
}

}  // namespace anasim::nn
