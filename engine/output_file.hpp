// The one way a run writes a file: under a unique temporary name in the target's directory, every write, flush,
// fsync and close checked, renamed over the target only when complete; a set of files all or none.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include "engine/types.hpp"

namespace anasim {

// True for the names that mean "standard output" when the user gives them as an output file:
// "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1". Such outputs are written in place, not renamed.
bool is_stdout_name(const std::string& path);

// Whether `path` may be replaced by an output file: an existing target must be a regular file (or a symlink to
// one); device nodes (/dev/null), directories, FIFOs and sockets are refused with a message naming the kind.
Status check_output_target(const std::string& path);

// One output file being written. open() creates "<dir>/.<name>.XXXXXX" with mkstemp (unique, so two runs
// writing the same target never share a temporary) with the permissions a new file would get (0666 & ~umask).
// commit() flushes, fsyncs and closes the stream, checking each, and only then renames it over the target.
// An OutputFile destroyed or discarded before commit() removes its temporary; the target is never touched.
class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile() { discard(); }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Checks the target (check_output_target) and creates the temporary. For a stdout name, writes to stdout.
  Status open(const std::string& target);
  // The stream to write to (valid between open() and commit()/discard()). Write errors are caught at commit().
  std::FILE* stream() const { return f_; }
  // Writes n bytes; false on error (also reported again by commit()). Every kWritebackBytes written this way, the
  // kernel is asked to start writing the file back to disk (without waiting), so that the fsync of finish() has
  // little left to wait for.
  bool write(const void* data, std::size_t n);
  static constexpr std::size_t kWritebackBytes = std::size_t(1) << 20;
  // Flush, fsync, close; then rename (regular targets). Errors name the target and the reason (errno text).
  Status finish();   // all but the rename: the file is complete under its temporary name
  Status rename();   // after finish(): moves the temporary over the target
  Status commit() { Status st = finish(); return st ? rename() : st; }
  // Closes and removes the temporary (no-op after commit()).
  void discard();
  const std::string& target() const { return target_; }

 private:
  std::FILE* f_ = nullptr;
  std::string target_;
  std::string tmp_;        // empty for stdout
  int slot_ = -1;          // register_cleanup's slot of tmp_
  void remove_tmp();       // unlinks and forgets tmp_
  bool to_stdout_ = false;
  bool finished_ = false;
  int err_ = 0;            // first errno seen by write()
  std::size_t unsynced_ = 0;  // bytes written since the last start of write-back
  void start_writeback();
};

// Writes `bytes` to `path` through an OutputFile ("-" and /dev/stdout: standard output).
Status write_output_file(const std::string& path, std::string_view bytes);

// A set of output files committed together (the CSV directory): every file is written and finished under its
// temporary name first; only when all are complete are they renamed into place. A failure before the renames
// leaves every target as it was; the renames themselves are single system calls on one file system.
class OutputSet {
 public:
  // Opens one more member; nullptr with *st set on failure.
  OutputFile* add(const std::string& target, Status* st);
  Status commit();
  void discard() { files_.clear(); }

 private:
  std::vector<std::unique_ptr<OutputFile>> files_;
};

// A command-line program's outputs on SIGINT, SIGTERM and SIGHUP: the handler removes every temporary being
// written (and the directories registered below), then dies of the signal as it would have. Signals the process
// ignores stay ignored. Not for libraries (the Python module leaves its host's handlers alone).
void remove_temporaries_on_signals();
// The registry the handler reads: a path removed on those signals until unregistered (`directory`: rmdir, after the
// files). Returns the slot, or -1 when every slot is taken (the path is then not removed on a signal).
int register_cleanup(const std::string& path, bool directory);
void unregister_cleanup(int slot);

// Flushes stdout and reports a write error on it (full disk, closed pipe) as a failed Status, so that a command
// whose printed output was lost exits non-zero.
Status finish_stdout();

}  // namespace anasim
