// Tests for nn/idx.cpp and nn/dataset.cpp: IDX files written here (plain and gzip, wrong magic, truncated,
// count mismatch) and the data-directory look-up with its error messages.
#include <doctest/doctest.h>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>
#include <zlib.h>
#include "nn/dataset.hpp"
#include "nn/idx.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::nn;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("nn_data", name); }

void put_be32(std::vector<unsigned char>& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}

// IDX bytes: magic, dims, then payload.
std::vector<unsigned char> idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims,
                                     const std::vector<unsigned char>& payload) {
  std::vector<unsigned char> b;
  put_be32(b, magic);
  for (auto d : dims) put_be32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

void write_plain(const fs::path& p, const std::vector<unsigned char>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const fs::path& p, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

// n images of rows x cols; pixel k of image i is (i * 7 + k) % 256.
std::vector<unsigned char> pixels(int n, int rows, int cols) {
  std::vector<unsigned char> p;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < rows * cols; ++k) p.push_back(static_cast<unsigned char>((i * 7 + k) % 256));
  return p;
}

std::vector<unsigned char> labels(int n) {
  std::vector<unsigned char> l;
  for (int i = 0; i < n; ++i) l.push_back(static_cast<unsigned char>(i % 10));
  return l;
}

// A complete tiny data set (train: n_train, t10k: n_test images of 3x2) in dir; gzip or plain files.
void write_dataset(const fs::path& dir, int n_train, int n_test, bool gz) {
  auto w = [&](const std::string& base, const std::vector<unsigned char>& b) {
    if (gz) write_gz(dir / (base + ".gz"), b);
    else write_plain(dir / base, b);
  };
  w("train-images-idx3-ubyte", idx_bytes(0x803, {std::uint32_t(n_train), 3, 2}, pixels(n_train, 3, 2)));
  w("train-labels-idx1-ubyte", idx_bytes(0x801, {std::uint32_t(n_train)}, labels(n_train)));
  w("t10k-images-idx3-ubyte", idx_bytes(0x803, {std::uint32_t(n_test), 3, 2}, pixels(n_test, 3, 2)));
  w("t10k-labels-idx1-ubyte", idx_bytes(0x801, {std::uint32_t(n_test)}, labels(n_test)));
}

using test_support::contains;

// Sets or clears an environment variable for the lifetime of the object, then restores it.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~EnvGuard() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

TEST_CASE("idx: plain and gzip image and label files") {
  const fs::path d = scratch("idx_ok");
  const auto img = idx_bytes(0x803, {5, 3, 2}, pixels(5, 3, 2));
  const auto lab = idx_bytes(0x801, {5}, labels(5));
  write_plain(d / "img", img);
  write_gz(d / "img.gz", img);
  write_gz(d / "lab.gz", lab);
  for (const char* name : {"img", "img.gz"}) {
    IdxImages im;
    Status st = read_idx_images((d / name).string(), im);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(im.count == 5);
    CHECK(im.rows == 3);
    CHECK(im.cols == 2);
    REQUIRE(im.pixels.size() == 30u);
    CHECK(im.pixels[0] == 0.0f);
    CHECK(im.pixels[7] == doctest::Approx((1 * 7 + 1) / 255.0));  // image 1, pixel 1
    for (float p : im.pixels) CHECK((p >= 0.0f && p <= 1.0f));
  }
  std::vector<std::uint8_t> l;
  REQUIRE(read_idx_labels((d / "lab.gz").string(), l).ok());
  CHECK(l == std::vector<std::uint8_t>{0, 1, 2, 3, 4});
}

TEST_CASE("idx: errors name the file and the problem") {
  const fs::path d = scratch("idx_bad");
  IdxImages im;
  std::vector<std::uint8_t> l;

  SUBCASE("missing") {
    Status st = read_idx_images((d / "nope.gz").string(), im);
    REQUIRE_FALSE(st.ok());
    CHECK(st.errors[0].kind == ErrorKind::Input);
    CHECK(contains(st.to_string(), "nope.gz"));
    CHECK(contains(st.to_string(), "no such file"));
  }
  SUBCASE("wrong magic: a label file read as images") {
    write_gz(d / "lab.gz", idx_bytes(0x801, {3}, labels(3)));
    Status st = read_idx_images((d / "lab.gz").string(), im);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "lab.gz"));
    CHECK(contains(st.to_string(), "magic number 0x00000801"));
    CHECK(contains(st.to_string(), "label file"));
  }
  SUBCASE("wrong magic: not IDX at all") {
    write_plain(d / "text", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!', '!', '!'});
    Status st = read_idx_labels((d / "text").string(), l);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "not an IDX label file"));
  }
  SUBCASE("truncated pixel data (plain and gzip)") {
    auto img = idx_bytes(0x803, {4, 3, 2}, pixels(4, 3, 2));
    img.resize(img.size() - 5);
    write_plain(d / "short", img);
    write_gz(d / "short.gz", img);
    for (const char* name : {"short", "short.gz"}) {
      Status st = read_idx_images((d / name).string(), im);
      REQUIRE_FALSE(st.ok());
      CHECK(contains(st.to_string(), name));
      CHECK(contains(st.to_string(), "truncated"));
      CHECK(contains(st.to_string(), "19 bytes"));
    }
  }
  SUBCASE("truncated header") {
    write_plain(d / "head", {0, 0, 8, 3, 0, 0});
    Status st = read_idx_images((d / "head").string(), im);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "truncated IDX header"));
  }
  SUBCASE("truncated gzip stream") {
    write_gz(d / "full.gz", idx_bytes(0x803, {50, 3, 2}, pixels(50, 3, 2)));
    std::ifstream in(d / "full.gz", std::ios::binary);
    std::vector<char> gz((std::istreambuf_iterator<char>(in)), {});
    gz.resize(gz.size() / 2);
    write_plain(d / "cut.gz", std::vector<unsigned char>(gz.begin(), gz.end()));
    Status st = read_idx_images((d / "cut.gz").string(), im);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "cut.gz"));
  }
  SUBCASE("zero-sized images") {
    write_plain(d / "zero", idx_bytes(0x803, {1, 0, 2}, {}));
    Status st = read_idx_images((d / "zero").string(), im);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "bad image size 0x2"));
  }
}

TEST_CASE("dataset: load a split, gzip preferred, counts from the header") {
  const fs::path d = scratch("ds_ok");
  write_dataset(d, 13, 7, true);
  Dataset tr, te;
  Status st = load_split(d.string(), Split::Train, tr);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(load_split(d.string(), Split::Test, te).ok());
  CHECK(tr.size() == 13);
  CHECK(te.size() == 7);
  CHECK(tr.images.rows() == 13);
  CHECK(tr.images.cols() == 6);
  CHECK(tr.rows == 3);
  CHECK(tr.cols == 2);
  CHECK(tr.labels[12] == 2);
  CHECK(tr.images(2, 1) == doctest::Approx((2 * 7 + 1) / 255.0));
  CHECK(contains(tr.images_path, "train-images-idx3-ubyte.gz"));
}

TEST_CASE("dataset: images and labels of different counts") {
  const fs::path d = scratch("ds_mismatch");
  write_dataset(d, 4, 4, false);
  write_plain(d / "t10k-labels-idx1-ubyte", idx_bytes(0x801, {3}, labels(3)));
  Dataset te;
  Status st = load_split(d.string(), Split::Test, te);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "t10k-labels-idx1-ubyte"));
  CHECK(contains(st.to_string(), "3 labels"));
  CHECK(contains(st.to_string(), "4 images"));
}

TEST_CASE("dataset: look-up order and error messages") {
  const fs::path root = scratch("ds_lookup");
  const fs::path good = root / "good", empty = root / "empty", parent = root / "parent";
  fs::create_directories(good);
  fs::create_directories(empty);
  fs::create_directories(parent / "mnist");
  write_dataset(good, 3, 2, false);
  write_dataset(parent / "mnist", 3, 2, true);
  std::string dir;

  SUBCASE("explicit directory wins over ANASIM_DATA") {
    EnvGuard env("ANASIM_DATA", empty.string().c_str());
    REQUIRE(find_data_dir(DatasetKind::Mnist, good.string(), true, dir).ok());
    CHECK(dir == good.string());
  }
  SUBCASE("ANASIM_DATA, and a parent holding mnist/") {
    EnvGuard env("ANASIM_DATA", parent.string().c_str());
    REQUIRE(find_data_dir(DatasetKind::Mnist, "", true, dir).ok());
    CHECK(dir == (parent / "mnist").string());
  }
  SUBCASE("explicit directory without the files: error lists it and says how to fix it") {
    Status st = find_data_dir(DatasetKind::Mnist, empty.string(), true, dir);
    REQUIRE_FALSE(st.ok());
    CHECK(st.errors[0].kind == ErrorKind::Input);
    const std::string m = st.to_string();
    CHECK(contains(m, "MNIST"));
    CHECK(contains(m, empty.string() + " (--data): missing train-images-idx3-ubyte[.gz]"));
    CHECK(contains(m, "--data DIR"));
    CHECK(contains(m, "ANASIM_DATA"));
  }
  SUBCASE("ANASIM_DATA pointing nowhere") {
    EnvGuard env("ANASIM_DATA", (root / "nowhere").string().c_str());
    Status st = find_data_dir(DatasetKind::FashionMnist, "", false, dir);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "Fashion-MNIST"));
    CHECK(contains(st.to_string(), "nowhere (ANASIM_DATA): no such directory"));
  }
  SUBCASE("the test split alone is enough when training data is not needed") {
    fs::remove(good / "train-images-idx3-ubyte");
    CHECK(find_data_dir(DatasetKind::Mnist, good.string(), false, dir).ok());
    CHECK_FALSE(find_data_dir(DatasetKind::Mnist, good.string(), true, dir).ok());
  }
  SUBCASE("every candidate is listed when none fits") {
    std::vector<DataDirCandidate> c = {{empty.string(), "first"}, {(root / "x").string(), "second"}};
    Status st = find_data_dir_in(c, DatasetKind::Mnist, true, dir);
    REQUIRE_FALSE(st.ok());
    const std::string m = st.to_string();
    CHECK(contains(m, empty.string() + " (first): missing"));
    CHECK(contains(m, (root / "x").string() + " (second): no such directory"));
  }
  SUBCASE("defaults") {
    EnvGuard env("ANASIM_DATA", nullptr);
    const auto c = data_dir_candidates(DatasetKind::Mnist, "");
    REQUIRE(c.size() == 4);
    CHECK(c[0].dir == (fs::path(ANASIM_SOURCE_DIR) / "data" / "mnist").string());
    CHECK(c[1].dir == "../shared/mnist");
    CHECK(c[2].dir == (fs::path(ANASIM_SOURCE_DIR) / ".." / "shared" / "mnist").lexically_normal().string());
    CHECK(c[3].dir == "/usr/share/datasets/mnist");
    CHECK(default_data_dirs(DatasetKind::FashionMnist).back().dir == "/usr/share/datasets/fashion-mnist");
  }
}

TEST_CASE("dataset: kind names") {
  DatasetKind k;
  CHECK(parse_dataset_kind("mnist", k).ok());
  CHECK(k == DatasetKind::Mnist);
  CHECK(parse_dataset_kind("fashion-mnist", k).ok());
  CHECK(k == DatasetKind::FashionMnist);
  Status st = parse_dataset_kind("cifar", k);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "cifar"));
}
