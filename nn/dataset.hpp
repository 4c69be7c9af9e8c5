// Finding and loading the MNIST-style data sets (MNIST, Fashion-MNIST) from IDX files on disk.
// Look-up order: an explicit directory (--data), else $ANASIM_DATA, else a fixed list of default places.
#pragma once
#include <string>
#include <vector>
#include <Eigen/Dense>
#include "engine/types.hpp"

namespace anasim::nn {

enum class DatasetKind { Mnist, FashionMnist };
enum class Split { Train, Test };  // files "train-*" and "t10k-*"

// Row-major float matrix: one sample per row.
using MatrixRf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One split of a data set in memory.
struct Dataset {
  MatrixRf images;              // count x (rows*cols); pixel values in [0,1]
  std::vector<int> labels;      // size count; class index 0..9
  int rows = 0;                 // image height, pixels
  int cols = 0;                 // image width, pixels
  std::string images_path;      // the files it came from
  std::string labels_path;
  int size() const { return static_cast<int>(labels.size()); }
};

// "mnist" or "fashion-mnist" (also "fashion"); anything else is an Input error listing the choices.
Status parse_dataset_kind(const std::string& name, DatasetKind& kind);
const char* dataset_name(DatasetKind kind);  // "MNIST" / "Fashion-MNIST"

// One place to look, as shown in error messages.
struct DataDirCandidate {
  std::string dir;     // the directory as it will be opened
  std::string origin;  // why it is on the list: "--data", "ANASIM_DATA", "default"
};

// The default places for `kind`, in order: <repo>/data/<name>, ../shared/<name> relative to the current directory,
// <repo>/../shared/<name>, /usr/share/datasets/<name> (<name> = "mnist" or "fashion-mnist").
std::vector<DataDirCandidate> default_data_dirs(DatasetKind kind);

// The list actually searched: {explicit_dir} if given, else {$ANASIM_DATA} if set, else default_data_dirs().
std::vector<DataDirCandidate> data_dir_candidates(DatasetKind kind, const std::string& explicit_dir);

// The first candidate holding the IDX files of the splits needed (file names as published, with or without .gz).
// A candidate may also be a parent directory holding "<name>/". On failure the Input error lists every place
// looked at, what was missing there, and how to point at a copy (--data DIR or ANASIM_DATA).
Status find_data_dir_in(const std::vector<DataDirCandidate>& candidates, DatasetKind kind, bool need_train,
                        std::string& dir);
// find_data_dir_in(data_dir_candidates(kind, explicit_dir), ...).
Status find_data_dir(DatasetKind kind, const std::string& explicit_dir, bool need_train, std::string& dir);

// The image and label file of one split in `dir` ("<dir>/train-images-idx3-ubyte.gz" etc.; the .gz form wins).
// Error if either is missing.
Status split_files(const std::string& dir, Split split, std::string& images, std::string& labels);

// Reads one split from `dir`. Errors also cover images/labels count mismatches and labels outside 0..9.
Status load_split(const std::string& dir, Split split, Dataset& out);

}  // namespace anasim::nn
