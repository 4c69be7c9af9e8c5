// Tests for nn/mlp.cpp, nn/train.cpp and nn/model_io.cpp: gradient check against finite differences,
// determinism (same seed; 1 vs 2 OpenMP threads), learning a small separable problem, model files and the
// Keras importer. The "slow" case checks the shipped MNIST model (run by CTest label "slow" only).
#include <doctest/doctest.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <H5Cpp.h>
#include <unistd.h>
#include "nn/dataset.hpp"
#include "nn/mlp.hpp"
#include "nn/model_io.hpp"
#include "nn/train.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
using namespace anasim::nn;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("nn_train", name); }

using test_support::contains;

// n images of side x side pixels in 4 classes: a bright bar (row 2 or 6, or column 2 or 6) on a noisy
// background. Linearly separable, and still recognisable after shifts of 1 pixel.
Dataset bars(int n, int side, std::uint64_t seed) {
  Rng rng(seed);
  Dataset d;
  d.rows = d.cols = side;
  d.images.resize(n, side * side);
  d.labels.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int c = i % 4;
    d.labels[static_cast<std::size_t>(i)] = c;
    for (int k = 0; k < side * side; ++k) d.images(i, k) = static_cast<float>(0.3 * rng.uniform());
    const int pos = (c % 2 == 0) ? 2 : side - 4;
    for (int t = 0; t < side; ++t) {
      const int k = c < 2 ? pos * side + t : t * side + pos;
      d.images(i, k) = static_cast<float>(0.7 + 0.3 * rng.uniform());
    }
  }
  return d;
}

bool same_weights(const Mlp& a, const Mlp& b) {
  if (a.layers.size() != b.layers.size()) return false;
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const auto& wa = a.layers[l].weight;
    const auto& wb = b.layers[l].weight;
    if (wa.rows() != wb.rows() || wa.cols() != wb.cols()) return false;
    if (std::memcmp(wa.data(), wb.data(), sizeof(double) * static_cast<std::size_t>(wa.size())) != 0) return false;
    if (std::memcmp(a.layers[l].bias.data(), b.layers[l].bias.data(),
                    sizeof(double) * static_cast<std::size_t>(a.layers[l].bias.size())) != 0)
      return false;
  }
  return true;
}

// Trains a 400-64-4 network on 20x20 bars with `threads` OpenMP threads. With batches of 100 the first layer's
// products (5 MFLOP) are above the parallel threshold of nn/mlp.cpp and split into several chunks.
Mlp train_bars(const TrainOptions& o, int threads, const std::vector<int>& sizes = {400, 64, 4}) {
  const Dataset d = bars(210, 20, 5);
  Mlp net;
  REQUIRE(make_mlp(sizes, o.seed, net).ok());
  Status st;
  {
    test_support::OmpThreads limit(threads);
    st = train(net, d, nullptr, o, {});
  }
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return net;
}

}  // namespace

TEST_CASE("mlp: backward pass matches finite differences") {
  Mlp net;
  REQUIRE(make_mlp({5, 7, 6, 3}, 42, net).ok());
  Rng rng(7);
  for (auto& l : net.layers)
    for (Eigen::Index i = 0; i < l.bias.size(); ++i) l.bias(i) = 0.1 * rng.normal();
  MatrixRd x(9, 5);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.normal();
  const std::vector<int> y = {0, 1, 2, 2, 1, 0, 1, 2, 0};
  Mlp grad;
  MlpWorkspace ws;
  const double l0 = loss_and_gradient(net, x, y.data(), grad, ws);
  CHECK(l0 == doctest::Approx(loss(net, x, y.data())).epsilon(1e-14));
  const double h = 1e-6;
  double worst = 0.0;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    auto check = [&](double* p, const double* g, Eigen::Index n) {
      for (Eigen::Index i = 0; i < n; ++i) {
        const double keep = p[i];
        p[i] = keep + h;
        const double up = loss(net, x, y.data());
        p[i] = keep - h;
        const double dn = loss(net, x, y.data());
        p[i] = keep;
        const double fd = (up - dn) / (2 * h);
        worst = std::max(worst, std::abs(fd - g[i]) / std::max(1e-3, std::abs(fd) + std::abs(g[i])));
      }
    };
    check(net.layers[l].weight.data(), grad.layers[l].weight.data(), net.layers[l].weight.size());
    check(net.layers[l].bias.data(), grad.layers[l].bias.data(), net.layers[l].bias.size());
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("mlp: shapes, validation and initialisation") {
  Mlp net;
  REQUIRE(make_mlp({784, 128, 10}, 1, net).ok());
  CHECK(net.sizes() == std::vector<int>{784, 128, 10});
  CHECK(net.parameter_count() == 784 * 128 + 128 + 128 * 10 + 10);
  const double var = net.layers[0].weight.squaredNorm() / static_cast<double>(net.layers[0].weight.size());
  CHECK(var == doctest::Approx(2.0 / 784).epsilon(0.02));  // He initialisation
  CHECK_FALSE(make_mlp({784}, 1, net).ok());
  CHECK_FALSE(make_mlp({784, 0, 10}, 1, net).ok());
  REQUIRE(make_mlp({4, 3, 2}, 1, net).ok());
  net.layers[1].weight.resize(2, 5);
  Status st = validate(net);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "layer 1: 5 inputs, but layer 0 has 3 outputs"));
}

TEST_CASE("train: same seed, same weights; thread count does not matter") {
  TrainOptions o;
  o.epochs = 2;
  o.batch = 100;  // several 32-row chunks; 400 inputs: several 64-column chunks
  o.seed = 11;
  SUBCASE("plain") {}
  SUBCASE("sgd, constant rate") {
    o.optimizer = Optimizer::Sgd;
    o.schedule = LrSchedule::Constant;
    o.lr = 0.05;
  }
  SUBCASE("noise, shifts and weight decay") {
    o.noise = 0.1;
    o.shift = 1;
    o.weight_decay = 1e-3;
  }
  const Mlp a = train_bars(o, 1);
  const Mlp b = train_bars(o, 1);
  const Mlp c = train_bars(o, 2);
  CHECK(same_weights(a, b));
  CHECK(same_weights(a, c));
  o.seed = 12;
  CHECK_FALSE(same_weights(a, train_bars(o, 1)));
}

TEST_CASE("train: learns a separable problem, also with weight noise; reports every epoch") {
  const Dataset tr = bars(400, 8, 1), te = bars(200, 8, 2);
  TrainOptions o;
  o.epochs = 8;
  o.batch = 32;
  o.lr = 3e-3;
  std::vector<EpochReport> reps;
  SUBCASE("adam") {}
  SUBCASE("sgd") {
    o.optimizer = Optimizer::Sgd;
    o.lr = 0.05;
  }
  SUBCASE("adam with noise 0.2 and shifts") {
    o.noise = 0.2;
    o.shift = 1;
  }
  Mlp net;
  REQUIRE(make_mlp({64, 16, 4}, 3, net).ok());
  Status st = train(net, tr, &te, o, [&](const EpochReport& r) { reps.push_back(r); });
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(reps.size() == 8u);
  CHECK(reps.back().epoch == 8);
  CHECK(reps.back().loss < reps.front().loss);
  CHECK(reps.back().test_accuracy >= 0.97);
  CHECK(accuracy(net, te.images, te.labels) == reps.back().test_accuracy);
}

TEST_CASE("train: bad options and mismatched data are input errors") {
  const Dataset d = bars(20, 8, 1);
  Mlp net;
  REQUIRE(make_mlp({64, 8, 4}, 1, net).ok());
  TrainOptions o;
  o.epochs = 0;
  CHECK(contains(train(net, d, nullptr, o, {}).to_string(), "epochs"));
  o = TrainOptions{};
  o.noise = -0.1;
  CHECK(contains(train(net, d, nullptr, o, {}).to_string(), "noise"));
  o = TrainOptions{};
  o.lr = 0;
  CHECK(contains(train(net, d, nullptr, o, {}).to_string(), "learning rate"));
  o = TrainOptions{};
  REQUIRE(make_mlp({50, 8, 4}, 1, net).ok());
  Status st = train(net, d, nullptr, o, {});
  CHECK(st.errors.at(0).kind == ErrorKind::Input);
  CHECK(contains(st.to_string(), "50 inputs"));
  REQUIRE(make_mlp({64, 8, 3}, 1, net).ok());
  CHECK(contains(train(net, d, nullptr, o, {}).to_string(), "label 3"));
}

TEST_CASE("model_io: save and load round trip") {
  const fs::path dir = scratch("roundtrip");
  Mlp net;
  REQUIRE(make_mlp({12, 5, 4, 3}, 9, net).ok());
  net.layers[1].bias(2) = -0.25;
  ModelInfo info;
  info.epochs = 7;
  info.lr = 2e-3;
  info.seed = 0xfedcba9876543210ULL;
  info.noise = 0.1;
  info.train_samples = 22699;
  info.test_accuracy = 0.9789;
  info.test_samples = 10000;
  info.batch = 64;
  info.shift = 2;
  info.optimizer = "adam";
  info.schedule = "cosine";
  info.dataset = "MNIST";
  info.created_by = "anasim nn train --epochs 7";
  const std::string path = (dir / "m.h5").string();
  REQUIRE(save_model(path, net, info).ok());
  CHECK_FALSE(fs::exists(path + ".tmp"));
  Mlp back;
  ModelInfo bi;
  Status st = load_model(path, back, &bi);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(same_weights(net, back));
  CHECK(bi.epochs == 7);
  CHECK(bi.lr == 2e-3);
  CHECK(bi.seed == info.seed);
  CHECK(bi.noise == 0.1);
  CHECK(bi.train_samples == 22699);
  CHECK(bi.test_accuracy == 0.9789);
  CHECK(bi.test_samples == 10000);
  CHECK(bi.batch == 64);
  CHECK(bi.shift == 2);
  CHECK(bi.optimizer == "adam");
  CHECK(bi.dataset == "MNIST");
  CHECK(bi.created_by == info.created_by);

  H5::H5File f(path, H5F_ACC_RDONLY);
  std::string format;
  H5::Attribute fa = f.openAttribute("format");
  fa.read(fa.getStrType(), format);
  CHECK(format == "anasim-mlp-1");
  H5::DataSet w = f.openDataSet("/layer0/weight");
  hsize_t dims[2];
  w.getSpace().getSimpleExtentDims(dims);
  CHECK(dims[0] == 5);  // outputs x inputs
  CHECK(dims[1] == 12);
}

TEST_CASE("model_io: loader errors are clear") {
  const fs::path dir = scratch("load_errors");
  Mlp net, back;
  REQUIRE(make_mlp({6, 4, 3}, 1, net).ok());
  const std::string good = (dir / "good.h5").string();
  REQUIRE(save_model(good, net, ModelInfo{}).ok());

  SUBCASE("missing file") {
    Status st = load_model((dir / "none.h5").string(), back);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "none.h5: error: no such file"));
  }
  SUBCASE("not HDF5") {
    std::ofstream((dir / "text.h5").string()) << "hello\n";
    CHECK(contains(load_model((dir / "text.h5").string(), back).to_string(), "not an HDF5 file"));
  }
  SUBCASE("wrong weight shape") {
    {
      H5::H5File f(good, H5F_ACC_RDWR);
      f.unlink("/layer1/weight");
      const hsize_t d[2] = {3, 5};
      std::vector<double> z(15, 0.0);
      f.openGroup("layer1").createDataSet("weight", H5::PredType::IEEE_F64LE, H5::DataSpace(2, d))
          .write(z.data(), H5::PredType::NATIVE_DOUBLE);
    }
    Status st = load_model(good, back);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "/layer1/weight is 3x5, expected 3x4"));
    CHECK(back.layers.empty());
  }
  SUBCASE("missing layer group") {
    {
      H5::H5File f(good, H5F_ACC_RDWR);
      f.unlink("/layer1");
    }
    CHECK(contains(load_model(good, back).to_string(), "missing group '/layer1'"));
  }
  SUBCASE("not an anasim model") {
    {
      H5::H5File f(good, H5F_ACC_RDWR);
      f.removeAttr("format");
    }
    CHECK(contains(load_model(good, back).to_string(), "no 'format' attribute"));
  }
  SUBCASE("saving an inconsistent network is refused") {
    net.layers[1].bias.resize(2);
    CHECK_FALSE(save_model((dir / "bad.h5").string(), net, ModelInfo{}).ok());
    CHECK_FALSE(fs::exists(dir / "bad.h5"));
  }
}

namespace {

// A fixed-length string array attribute, as h5py writes numpy 'S' arrays.
void string_array_attr(H5::H5Object& o, const char* name, const std::vector<std::string>& v) {
  std::size_t len = 1;
  for (const auto& s : v) len = std::max(len, s.size());
  H5::StrType t(H5::PredType::C_S1, len);
  t.setStrpad(H5T_STR_NULLPAD);
  std::vector<char> buf(len * v.size(), '\0');
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(buf.data() + i * len, v[i].data(), v[i].size());
  const hsize_t n = v.size();
  o.createAttribute(name, t, H5::DataSpace(1, &n)).write(t, buf.data());
}

void float_dataset(H5::Group g, const std::string& name, const std::vector<float>& v, std::vector<hsize_t> dims) {
  g.createDataSet(name, H5::PredType::IEEE_F32LE, H5::DataSpace(static_cast<int>(dims.size()), dims.data()))
      .write(v.data(), H5::PredType::NATIVE_FLOAT);
}

}  // namespace

TEST_CASE("model_io: Keras import") {
  const fs::path dir = scratch("keras");
  // Layers 3 -> 2 -> 2; kernels are inputs x outputs, stored row-major.
  const std::vector<float> k1 = {1, 2, 3, 4, 5, 6}, b1 = {0.5f, -0.5f};  // k1(i,o) = k1[i*2+o]
  const std::vector<float> k2 = {1, -1, 2, 0}, b2 = {0, 1};

  SUBCASE("whole model file: layer_names order, weight_names, a layer without weights") {
    const std::string path = (dir / "model.h5").string();
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      {
        H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
        f.createAttribute("model_config", t, H5::DataSpace(H5S_SCALAR))
            .write(t, std::string(R"({"layers": [{"config": {"activation": "relu"}}, )"
                                  R"({"config": {"activation": "softmax"}}]})"));
      }
      H5::Group mw = f.createGroup("model_weights");
      // "z_in" sorts last but comes first in layer_names; "flatten" carries no weights.
      string_array_attr(mw, "layer_names", {"flatten", "z_in", "a_out"});
      H5::Group fl = mw.createGroup("flatten");
      {
        H5::StrType t(H5::PredType::C_S1, 1);
        const hsize_t zero = 0;
        fl.createAttribute("weight_names", t, H5::DataSpace(1, &zero));
      }
      H5::Group l1 = mw.createGroup("z_in");
      string_array_attr(l1, "weight_names", {"z_in/kernel:0", "z_in/bias:0"});
      H5::Group l1i = l1.createGroup("z_in");
      float_dataset(l1i, "kernel:0", k1, {3, 2});
      float_dataset(l1i, "bias:0", b1, {2});
      H5::Group l2 = mw.createGroup("a_out");
      string_array_attr(l2, "weight_names", {"a_out/kernel:0", "a_out/bias:0"});
      H5::Group l2i = l2.createGroup("a_out");
      float_dataset(l2i, "kernel:0", k2, {2, 2});
      float_dataset(l2i, "bias:0", b2, {2});
    }
    Mlp net;
    Status st = import_keras(path, net);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(st.warnings.empty());
    REQUIRE(net.sizes() == std::vector<int>{3, 2, 2});
    CHECK(net.layers[0].weight(0, 0) == 1);  // W = kernel^T
    CHECK(net.layers[0].weight(0, 1) == 3);
    CHECK(net.layers[0].weight(1, 2) == 6);
    CHECK(net.layers[0].bias(1) == -0.5);
    CHECK(net.layers[1].weight(0, 1) == 2);
    // x = (1, 0, -1): h = relu(k1^T x + b1) = relu(1-5+0.5, 2-6-0.5) = 0 -> logits = b2: class 1.
    MatrixRf x(1, 3);
    x << 1, 0, -1;
    CHECK(predict(net, x)[0] == 1);
    // x = (1, 1, 1): h = relu(9.5, 11.5); logits = (9.5 + 2*11.5, -9.5 + 1) -> class 0.
    x << 1, 1, 1;
    CHECK(predict(net, x)[0] == 0);

    // load_model points Keras files at the importer; the converted model loads back.
    Mlp other;
    CHECK(contains(load_model(path, other).to_string(), "Keras"));
    const std::string out = (dir / "converted.h5").string();
    REQUIRE(save_model(out, net, ModelInfo{}).ok());
    REQUIRE(load_model(out, other).ok());
    CHECK(same_weights(net, other));
  }
  SUBCASE("save_weights file: layers at the root, sorted by name, no weight_names") {
    const std::string path = (dir / "weights.h5").string();
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      H5::Group a = f.createGroup("dense_1").createGroup("dense_1");
      float_dataset(a, "kernel:0", k1, {3, 2});
      float_dataset(a, "bias:0", b1, {2});
      H5::Group b = f.createGroup("dense_2").createGroup("dense_2");
      float_dataset(b, "kernel:0", k2, {2, 2});
      float_dataset(b, "bias:0", b2, {2});
    }
    Mlp net;
    Status st = import_keras(path, net);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(net.sizes() == std::vector<int>{3, 2, 2});
    CHECK(net.layers[1].bias(1) == 1);
  }
  SUBCASE("errors: a non-dense layer, layers that do not chain") {
    const std::string path = (dir / "bad.h5").string();
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      H5::Group mw = f.createGroup("model_weights");
      string_array_attr(mw, "layer_names", {"bn", "d"});
      H5::Group bn = mw.createGroup("bn");
      string_array_attr(bn, "weight_names", {"bn/gamma:0"});
      float_dataset(bn.createGroup("bn"), "gamma:0", {1, 1}, {2});
      H5::Group d = mw.createGroup("d");
      float_dataset(d.createGroup("d"), "kernel:0", k1, {3, 2});
    }
    Mlp net;
    Status st = import_keras(path, net);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "/model_weights/bn has weights (bn/gamma:0) but no kernel"));

    const std::string chain = (dir / "chain.h5").string();
    {
      H5::H5File f(chain, H5F_ACC_TRUNC);
      H5::Group a = f.createGroup("d1").createGroup("d1");
      float_dataset(a, "kernel:0", k1, {3, 2});
      float_dataset(a, "bias:0", b1, {2});
      H5::Group b = f.createGroup("d2").createGroup("d2");
      float_dataset(b, "kernel:0", k1, {3, 2});
      float_dataset(b, "bias:0", b1, {2});
    }
    st = import_keras(chain, net);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "do not form a chain"));
  }
}

// Slow: full MNIST test set. Skipped in the default run; CTest runs it with --no-skip under the label "slow".
TEST_CASE("nn: shipped MNIST models reach their documented accuracy" * doctest::skip()) {
  std::string dir;
  Status found = find_data_dir(DatasetKind::Mnist, "", false, dir);
  if (!found) {
    MESSAGE("MNIST not found, shipped-model check skipped: " << found.to_string());
    return;
  }
  Dataset test;
  REQUIRE(load_split(dir, Split::Test, test).ok());
  REQUIRE(test.size() == 10000);
  for (const char* name : {"mlp_784_128_10.h5", "mlp_784_128_10_hwa.h5"}) {
    const std::string model = name;
    CAPTURE(model);
    Mlp net;
    ModelInfo info;
    Status st = load_model((fs::path(ANASIM_SOURCE_DIR) / "data" / name).string(), net, &info);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(net.sizes() == std::vector<int>{784, 128, 10});
    const double acc = accuracy(net, test.images, test.labels);
    MESSAGE(model << ": test accuracy " << acc);
    CHECK(acc >= 0.973);
    CHECK(std::abs(acc - info.test_accuracy) <= 5e-4);  // the recorded number, within 5 images of 10,000
  }
}

TEST_CASE("model_io: an attribute whose dataspace claims more strings than it stores is a format error") {
  // Found by fuzz/fuzz_model: a Keras weight_names attribute whose element count times the string size wrapped
  // around 2^64, so the read buffer was 32 bytes and the strings were copied past its end.
  const std::string path = ANASIM_SOURCE_DIR "/tests/bad_inputs/model_string_count.h5";
  Mlp net;
  Status st = import_keras(path, net);
  REQUIRE_FALSE(st.ok());
  CHECK(st.to_string().find("model_string_count.h5") != std::string::npos);
  CHECK(st.to_string().find("claims") != std::string::npos);
  CHECK(net.layers.empty());
}

TEST_CASE("model_io: a dataset whose dataspace claims more elements than the file holds is a format error") {
  // Found by fuzz/fuzz_model: the claimed count exceeded what a vector can hold (std::length_error, uncaught).
  const std::string path = ANASIM_SOURCE_DIR "/tests/bad_inputs/model_dataset_count.h5";
  Mlp net;
  Status st = load_model(path, net);
  REQUIRE_FALSE(st.ok());
  CHECK(st.to_string().find("elements claimed") != std::string::npos);
}
