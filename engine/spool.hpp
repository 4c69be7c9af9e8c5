// The spool of a streamed transient's rows (engine/results.hpp RowSink) for the output writers that need its rows
// again once the run ends (HDF5, SPICE raw): an unnamed temporary file beside the output.
#pragma once
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>
#include <map>
#include <memory>
#include <fmt/format.h>
#include "engine/output_file.hpp"
#include "engine/results.hpp"

namespace anasim {

// A transient's rows spooled to an unnamed temporary file beside the output (Hdf5Output::stream, RawOutput::stream):
// each row the sweep value and then one value per signal, as the recorder gives them; read back a block of rows at
// a time.
class Spool final : public RowSink {
 public:
  explicit Spool(const std::string& target) : target_(target) {}
  ~Spool() override {
    if (fd_ >= 0) ::close(fd_);
  }
  // The temporary: O_TMPFILE in the output's directory, else a unique name there unlinked at once.
  Status open() {
    const std::filesystem::path p(target_);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      std::string tmpl = (std::filesystem::path(dir) / ("." + p.filename().string() + ".spool.XXXXXX")).string();
      fd_ = ::mkstemp(tmpl.data());
      if (fd_ >= 0) ::unlink(tmpl.c_str());
    }
    if (fd_ < 0) return error(errno);
    return {};
  }
  bool begin(const AnalysisResult& a) override {
    width_ = 1 + a.signals.size();
    return err_ == 0;
  }
  bool rows(const double* data, size_t n, size_t width) override {
    if (err_ != 0 || width != width_) {
      if (err_ == 0) err_ = EINVAL;
      return false;
    }
    const char* p = reinterpret_cast<const char*>(data);
    size_t left = n * width * sizeof(double);
    while (left > 0) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err_ = w < 0 ? errno : EIO;
        return false;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    rows_ += n;
    return true;
  }
  Status end() override { return err_ == 0 ? Status{} : error(err_); }
  size_t rows() const { return rows_; }
  size_t width() const { return width_; }
  // Calls f(p0, m, rows) for consecutive blocks of m rows from row p0 (rows: m x width values), each of about
  // `values` values (8 bytes each) and at least `min_rows` rows.
  template <class F>
  void for_blocks(size_t min_rows, F f, size_t values = size_t(1) << 20) const {
    const size_t block = std::max<size_t>(min_rows, values / width_);
    std::vector<double> buf(std::min(block, rows_) * width_);
    for (size_t p0 = 0; p0 < rows_; p0 += block) {
      const size_t m = std::min(block, rows_ - p0);
      read(p0, m, buf.data());
      f(p0, m, buf.data());
    }
  }
  // Rows [r0, r0 + n) into out (n x width values). Throws on a failed read (reported as the HDF5 file's error).
  void read(size_t r0, size_t n, double* out) const {
    char* p = reinterpret_cast<char*>(out);
    size_t left = n * width_ * sizeof(double);
    off_t at = static_cast<off_t>(r0 * width_ * sizeof(double));
    while (left > 0) {
      const ssize_t g = ::pread(fd_, p, left, at);
      if (g < 0 && errno == EINTR) continue;
      if (g <= 0) throw std::runtime_error(fmt::format("reading the spooled rows back: {}", g < 0 ? std::strerror(errno) : "short file"));
      p += g;
      left -= static_cast<size_t>(g);
      at += g;
    }
  }

 private:
  Status error(int e) const {
    return Status::fail(ErrorKind::Other, fmt::format("cannot write '{}': spooling the transient's rows: {}", target_,
                                                      std::strerror(e)));
  }
  std::string target_;
  int fd_ = -1;
  size_t width_ = 0, rows_ = 0;
  int err_ = 0;
};


using Spools = std::map<std::string, std::unique_ptr<Spool>>;

// The output file of a run and the spools of its streamed analyses, by group (Hdf5Output, RawOutput).
class SpoolSet {
 public:
  Status open(const std::string& path) {  // checks the target
    path_ = path;
    return is_stdout_name(path) ? Status{} : check_output_target(path);
  }
  Status stream(const std::string& group, RowSink*& sink) {
    auto sp = std::make_unique<Spool>(path_);
    if (Status st = sp->open(); !st) return st;
    sink = sp.get();
    spools_[group] = std::move(sp);
    return {};
  }
  const std::string& path() const { return path_; }
  const Spools& spools() const { return spools_; }

 private:
  std::string path_;
  Spools spools_;
};

}  // namespace anasim
