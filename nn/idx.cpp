// IDX reader: big-endian header (magic, then one 32-bit size per dimension), then the raw unsigned bytes.
// zlib's gzopen/gzread read both gzip and uncompressed files, so one code path serves both. Header counts are
// checked against the file's size before anything is allocated; a gzip stream is read to its end (CRC checked).
#include "nn/idx.hpp"
#include <algorithm>
#include <climits>
#include <cstdio>
#include <sys/stat.h>
#include <fmt/format.h>
#include <zlib.h>

namespace anasim::nn {

namespace {

constexpr std::uint32_t kMagicImages = 0x00000803;  // type 0x08 (unsigned byte), 3 dimensions
constexpr std::uint32_t kMagicLabels = 0x00000801;  // type 0x08 (unsigned byte), 1 dimension
constexpr std::uint32_t kMaxSide = 1u << 14;         // sanity limit on an image side, pixels

Status file_error(const std::string& path, std::string msg) {
  const SourceLoc loc = SourceLoc::whole(path);
  return Status::input(std::move(msg), loc);
}

// An open gzip (or plain) file, closed on scope exit.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {
    struct stat st {};
    if (f_ && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~GzFile() {
    if (f_) gzclose(f_);
  }
  // The most bytes the file can decompress to: its size (plain) or deflate's limit of 1032:1 (gzip).
  // 0 = unknown (not a regular file).
  std::uint64_t max_bytes() const {
    if (size_ == 0) return 0;
    return gzdirect(f_) ? size_ : size_ * 1032 + 1024;
  }
  // After the payload: reads on to the end, which makes zlib check the gzip trailer (CRC-32 and length), and
  // closes. An error for a bad trailer or for bytes after the payload.
  std::string finish() {
    unsigned char extra;
    const int got = gzread(f_, &extra, 1);
    std::string why = got < 0 ? error() : got > 0 ? "data after the items the header promises" : "";
    const int rc = gzclose(f_);
    f_ = nullptr;
    if (why.empty() && rc != Z_OK) why = rc == Z_BUF_ERROR ? "truncated gzip stream" : "gzip read error";
    return why;
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  bool is_open() const { return f_ != nullptr; }

  // Reads up to n bytes; returns the number read, or -1 on a read/decompression error.
  long long read(void* dst, std::size_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(f_, p + done, chunk);
      if (got < 0) return -1;
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return static_cast<long long>(done);
  }
  std::string error() {
    int code = 0;
    const char* msg = gzerror(f_, &code);
    return msg && *msg ? msg : "read error";
  }

 private:
  gzFile f_;
  std::uint64_t size_ = 0;  // [bytes] of a regular file, else 0
};

// The header's promise of `bytes` payload bytes checked against what the file can hold.
Status check_size(const GzFile& f, const std::string& path, const char* what, std::uint64_t count, std::uint64_t bytes) {
  const std::uint64_t max = f.max_bytes();
  if (max > 0 && bytes > max)
    return file_error(path, fmt::format("the IDX header promises {} {} ({} bytes), more than the file can hold",
                                        count, what, bytes));
  return Status::success();
}

Status finish(GzFile& f, const std::string& path) {
  const std::string why = f.finish();
  if (!why.empty()) return file_error(path, fmt::format("corrupt IDX file: {}", why));
  return Status::success();
}

std::uint32_t big_endian(const unsigned char* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
}

// Opens `path` and reads the magic number and `ndims` dimension sizes.
Status read_header(GzFile& f, const std::string& path, std::uint32_t magic, const char* what,
                   std::vector<std::uint32_t>& dims) {
  if (!f.is_open()) {
    std::FILE* probe = std::fopen(path.c_str(), "rb");
    if (probe) std::fclose(probe);
    return file_error(path, probe ? fmt::format("cannot open {} file", what)
                                  : fmt::format("cannot open {} file: no such file", what));
  }
  const std::size_t ndims = magic & 0xff;
  unsigned char head[4 + 4 * 3];
  const std::size_t want = 4 + 4 * ndims;
  const long long got = f.read(head, want);
  if (got < 0) return file_error(path, fmt::format("cannot read IDX header: {}", f.error()));
  if (got < 4) return file_error(path, fmt::format("truncated IDX file: {} bytes, too short for a header", got));
  const std::uint32_t m = big_endian(head);
  if (m != magic) {
    std::string hint;
    if (m == kMagicImages || m == kMagicLabels)
      hint = fmt::format(" (this is an IDX {} file)", m == kMagicImages ? "image" : "label");
    return file_error(path, fmt::format("not an IDX {} file: magic number 0x{:08x}, expected 0x{:08x}{}", what, m,
                                        magic, hint));
  }
  if (static_cast<std::size_t>(got) < want)
    return file_error(path, fmt::format("truncated IDX header: {} bytes, expected {}", got, want));
  dims.resize(ndims);
  for (std::size_t i = 0; i < ndims; ++i) dims[i] = big_endian(head + 4 + 4 * i);
  return Status::success();
}

Status read_payload(GzFile& f, const std::string& path, const char* what, unsigned char* dst, std::size_t n) {
  const long long got = f.read(dst, n);
  if (got < 0) return file_error(path, fmt::format("cannot read {} data: {}", what, f.error()));
  if (static_cast<std::size_t>(got) < n)
    return file_error(path, fmt::format("truncated IDX file: {} bytes of {} data, the header promises {}", got, what,
                                        n));
  return Status::success();
}

}  // namespace

Status read_idx_images(const std::string& path, IdxImages& out) {
  out = IdxImages{};
  GzFile f(path);
  std::vector<std::uint32_t> dims;
  if (Status st = read_header(f, path, kMagicImages, "image", dims); !st) return st;
  const std::uint32_t n = dims[0], rows = dims[1], cols = dims[2];
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide)
    return file_error(path, fmt::format("bad image size {}x{} in the IDX header", rows, cols));
  const std::uint64_t total = std::uint64_t{n} * rows * cols;
  if (n > INT_MAX || total > (std::uint64_t{1} << 36))
    return file_error(path, fmt::format("implausible image count {} in the IDX header", n));
  if (Status st = check_size(f, path, "images", n, total); !st) return st;
  std::vector<unsigned char> bytes(static_cast<std::size_t>(total));
  if (Status st = read_payload(f, path, "pixel", bytes.data(), bytes.size()); !st) return st;
  if (Status st = finish(f, path); !st) return st;
  out.count = static_cast<int>(n);
  out.rows = static_cast<int>(rows);
  out.cols = static_cast<int>(cols);
  out.pixels.resize(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) out.pixels[i] = static_cast<float>(bytes[i]) / 255.0f;
  return Status::success();
}

Status read_idx_labels(const std::string& path, std::vector<std::uint8_t>& out) {
  out.clear();
  GzFile f(path);
  std::vector<std::uint32_t> dims;
  if (Status st = read_header(f, path, kMagicLabels, "label", dims); !st) return st;
  if (dims[0] > INT_MAX) return file_error(path, fmt::format("implausible label count {} in the IDX header", dims[0]));
  if (Status st = check_size(f, path, "labels", dims[0], dims[0]); !st) return st;
  out.resize(dims[0]);
  if (Status st = read_payload(f, path, "label", out.data(), out.size()); !st) {
    out.clear();
    return st;
  }
  if (Status st = finish(f, path); !st) {
    out.clear();
    return st;
  }
  return Status::success();
}

}  // namespace anasim::nn
