// Reader for IDX files, the format of MNIST and Fashion-MNIST (gzip-compressed or plain).
// Failures come back as a Status naming the file; nothing here throws.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "engine/types.hpp"

namespace anasim::nn {

// An IDX image file (magic 0x00000803: unsigned bytes, 3 dimensions).
struct IdxImages {
  int count = 0;               // number of images, from the header
  int rows = 0;                // pixels per column of an image
  int cols = 0;                // pixels per row of an image
  std::vector<float> pixels;   // size count*rows*cols; image-major, then row-major; byte/255, in [0,1]
};

// Reads images from `path`. Plain and gzip files are both accepted (zlib detects which).
// Errors (ErrorKind::Input, located at the file): missing/unreadable, wrong magic, bad dimensions, truncated.
Status read_idx_images(const std::string& path, IdxImages& out);

// Reads labels (magic 0x00000801: unsigned bytes, 1 dimension); out.size() is the header's item count.
Status read_idx_labels(const std::string& path, std::vector<std::uint8_t>& out);

}  // namespace anasim::nn
