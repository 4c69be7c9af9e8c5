// HDF5 files built in memory and written through the host's OutputFile: HDF5 itself never touches the disk, so a
// full disk is reported by one checked write and rename, never by a failed H5Fclose at exit. For the sources of the
// HDF5 module only (engine/hdf5_module.hpp); the rest of anasim reaches HDF5 through the module's functions.
#pragma once
#include <cstddef>
#include <string>
#include <H5Cpp.h>
#include "engine/hdf5_module.hpp"
#include "engine/types.hpp"

namespace anasim {

// An HDF5 file built in memory: the core driver without backing store, its buffer handed to us when the file is
// closed (file image callbacks), so the image is the complete file HDF5 would have written. Not copyable (the
// callbacks hold its address). Usage: Hdf5Image img(bytes); H5::H5File f(path, H5F_ACC_TRUNC, fcpl, img.access());
// ... write ...; return img.save(f, path);
class Hdf5Image {
 public:
  // `expected_bytes`: about the size of the file (the buffer grows in steps of it, at least 1 MiB; each step is zeroed
  // whole, so an upper estimate close to the size is best). Throws H5::Exception.
  explicit Hdf5Image(std::size_t expected_bytes);
  ~Hdf5Image();
  Hdf5Image(const Hdf5Image&) = delete;
  Hdf5Image& operator=(const Hdf5Image&) = delete;

  // File access properties for H5::H5File (add libver bounds etc. as needed).
  H5::FileAccPropList& access() { return fapl_; }
  // Closes `file` (memory only) and writes its image to `path` with write_output_file(). Throws H5::Exception
  // when HDF5 fails to close the file.
  Status save(H5::H5File& file, const std::string& path);

 private:
  static void* cb_malloc(std::size_t size, H5FD_file_image_op_t, void* udata);
  static void* cb_memcpy(void* dest, const void* src, std::size_t size, H5FD_file_image_op_t, void*);
  static void* cb_realloc(void* ptr, std::size_t size, H5FD_file_image_op_t, void* udata);
  static herr_t cb_free(void* ptr, H5FD_file_image_op_t op, void* udata);
  static void* cb_udata_copy(void* udata) { return udata; }
  static herr_t cb_udata_free(void*) { return 0; }

  H5::FileAccPropList fapl_;
  void* buffer_ = nullptr;    // the driver's current buffer (malloc'ed)
  std::size_t size_ = 0;      // its size [bytes]
  void* closed_ = nullptr;    // the buffer of the closed file, kept by cb_free (freed by the destructor)
  std::size_t closed_size_ = 0;
};

// An HDF5 exception's message with the innermost reason from HDF5's error stack and the failing function.
std::string hdf5_error_text(const H5::Exception& e);

// Scalar attributes of obj, shared by the module's writers: a variable-length string (UTF-8 unless cset says
// otherwise), a 64-bit integer and a double, stored little-endian.
void attr_string(H5::H5Object& obj, const char* name, const std::string& value, H5T_cset_t cset = H5T_CSET_UTF8);
void attr_int64(H5::H5Object& obj, const char* name, long value);
void attr_double(H5::H5Object& obj, const char* name, double value);

// The host's functions, set by the module's anasim_hdf5_init (engine/hdf5_module.hpp).
extern const hdf5::Host* g_host;

}  // namespace anasim
