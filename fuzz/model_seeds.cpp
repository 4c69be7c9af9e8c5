// Writes the seed corpus of fuzz_model: small, complete model files in both formats the reader accepts (anasim's
// own, through save_model, and Keras whole-model and weights-only layouts), so mutations start from valid files.
// Usage: model_seeds DIR   (bench/fuzz.sh runs it; the shipped 784-128-10 models are too large to be seeds)
#include <H5Cpp.h>
#include <cstdio>
#include <string>
#include <vector>
#include "nn/mlp.hpp"
#include "nn/model_io.hpp"

namespace {

using anasim::nn::Mlp;

// A network of the given layer sizes with small deterministic weights and biases.
Mlp small_net(const std::vector<int>& sizes) {
  Mlp net;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    anasim::nn::DenseLayer layer;
    layer.weight.resize(sizes[l + 1], sizes[l]);
    layer.bias.resize(sizes[l + 1]);
    for (int r = 0; r < sizes[l + 1]; ++r) {
      layer.bias(r) = 0.1 * (r % 3) - 0.1;
      for (int c = 0; c < sizes[l]; ++c) layer.weight(r, c) = 0.25 * ((r * 7 + c * 3) % 9 - 4);
    }
    net.layers.push_back(std::move(layer));
  }
  return net;
}

void string_attr(H5::H5Object& o, const char* name, const std::string& value) {
  H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
  o.createAttribute(name, t, H5::DataSpace(H5S_SCALAR)).write(t, value);
}

// A fixed-length string array attribute, as h5py writes Keras' layer_names and weight_names.
void string_array_attr(H5::H5Object& o, const char* name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  std::vector<char> buf(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) values[i].copy(&buf[i * width], width);
  H5::StrType t(H5::PredType::C_S1, width);
  const hsize_t n = values.size();
  o.createAttribute(name, t, H5::DataSpace(1, &n)).write(t, buf.data());
}

// One Dense layer of net in Keras' layout: kernel (inputs x outputs, float32) and bias below group/<name>/.
void keras_dense(H5::Group& root, const std::string& name, const anasim::nn::DenseLayer& layer) {
  H5::Group g = root.createGroup(name);
  string_array_attr(g, "weight_names", {name + "/kernel:0", name + "/bias:0"});
  H5::Group inner = g.createGroup(name);
  const hsize_t in = layer.weight.cols(), out = layer.weight.rows();
  std::vector<float> k(in * out), b(out);
  for (hsize_t i = 0; i < in; ++i)
    for (hsize_t o = 0; o < out; ++o) k[i * out + o] = static_cast<float>(layer.weight(o, i));
  for (hsize_t o = 0; o < out; ++o) b[o] = static_cast<float>(layer.bias(o));
  const hsize_t kd[2] = {in, out};
  inner.createDataSet("kernel:0", H5::PredType::IEEE_F32LE, H5::DataSpace(2, kd)).write(k.data(),
                                                                                        H5::PredType::NATIVE_FLOAT);
  inner.createDataSet("bias:0", H5::PredType::IEEE_F32LE, H5::DataSpace(1, &out)).write(b.data(),
                                                                                       H5::PredType::NATIVE_FLOAT);
}

// A Keras file of net: whole model (model_weights/ and model_config) or weights only (layers at the root).
void write_keras(const std::string& path, const Mlp& net, bool whole_model) {
  H5::H5File f(path, H5F_ACC_TRUNC);
  H5::Group root = whole_model ? f.createGroup("model_weights") : f.openGroup("/");
  std::vector<std::string> names;
  for (std::size_t l = 0; l < net.layers.size(); ++l) names.push_back("dense_" + std::to_string(l));
  string_array_attr(root, "layer_names", names);
  for (std::size_t l = 0; l < net.layers.size(); ++l) keras_dense(root, names[l], net.layers[l]);
  if (whole_model)
    string_attr(f, "model_config",
                R"({"layers": [{"config": {"activation": "relu"}}, {"config": {"activation": "softmax"}}]})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: model_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  anasim::nn::ModelInfo info;
  info.epochs = 1;
  info.dataset = "mnist";
  info.created_by = "fuzz/model_seeds";
  for (const auto& sizes : {std::vector<int>{3, 2, 2}, std::vector<int>{4, 3, 2, 2}}) {
    std::string name = "native";
    for (int s : sizes) name += "_" + std::to_string(s);
    const anasim::Status st = anasim::nn::save_model(dir + "/" + name + ".h5", small_net(sizes), info);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.to_string().c_str());
      return 1;
    }
  }
  try {
    write_keras(dir + "/keras_model_3_2_2.h5", small_net({3, 2, 2}), true);
    write_keras(dir + "/keras_weights_4_3_2.h5", small_net({4, 3, 2}), false);
  } catch (const H5::Exception& e) {
    std::fprintf(stderr, "HDF5 error: %s\n", e.getDetailMsg().c_str());
    return 1;
  }
  return 0;
}
