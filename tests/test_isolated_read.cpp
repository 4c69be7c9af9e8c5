// Tests for engine/isolated_read (issue 14): untrusted HDF5 files are read in a child process, so files that
// crash libhdf5 1.10.8 or make it loop forever give an error naming the file; every HDF5 reader goes through it.
#include <doctest/doctest.h>
#include <omp.h>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include "devices/crossbar.hpp"
#include "engine/checkpoint.hpp"
#include "engine/isolated_read.hpp"
#include "nn/model_io.hpp"
#include "nn_test_support.hpp"
#include "test_support.hpp"

using namespace anasim;
namespace fs = std::filesystem;
using test_support::contains;

namespace {

const std::string kBad = ANASIM_SOURCE_DIR "/tests/bad_inputs/";

// Sets an environment variable for the scope of a test (unset again, or restored, at the end).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Damages the first object of the file's (first) global heap collection, where HDF5 keeps variable-length
// strings. "hang": index 0 and size 0, so H5HG__cache_heap_deserialize advances by 0 bytes forever; "crash":
// object 1 claims 0x7ffffffff0 bytes, which H5HG_read copies into the string's buffer (a segfault).
void damage_global_heap(const fs::path& p, bool hang) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  const std::size_t at = bytes.find("GCOL");
  REQUIRE(at != std::string::npos);
  const std::size_t obj = at + 16;  // after signature, version, reserved and collection size
  const std::uint64_t size = hang ? 0 : 0x7ffffffff0ull;
  if (hang) bytes[obj] = bytes[obj + 1] = 0;
  for (int k = 0; k < 8; ++k) bytes[obj + 8 + k] = static_cast<char>(size >> (8 * k));
  f.seekp(0);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool same_nets(const nn::Mlp& a, const nn::Mlp& b) {
  if (a.layers.size() != b.layers.size()) return false;
  for (std::size_t l = 0; l < a.layers.size(); ++l)
    if (a.layers[l].weight != b.layers[l].weight || a.layers[l].bias != b.layers[l].bias) return false;
  return true;
}

}  // namespace

TEST_CASE("isolated_read: the Wire carries values back in order and detects a short reply") {
  Wire w;
  w.put(42);
  w.put(std::string("two\0words", 9));
  w.put(std::vector<double>{1.5, -2.0});
  w.put(std::vector<std::string>{"a", ""});
  const double raw[3] = {1, 2, 3};
  w.put_array(raw, 3);
  Wire r;
  r.assign(w.bytes());
  int i = 0;
  std::string s;
  std::vector<double> v;
  std::vector<std::string> vs;
  double back[3] = {};
  REQUIRE((r.get(i) && r.get(s) && r.get(v) && r.get(vs) && r.get_array(back, 3)));
  CHECK(i == 42);
  CHECK(s == std::string("two\0words", 9));
  CHECK(v == std::vector<double>{1.5, -2.0});
  CHECK(vs == std::vector<std::string>{"a", ""});
  CHECK(back[2] == 3);
  CHECK_FALSE(r.get(i));  // nothing left
  Wire cut;
  cut.assign(w.bytes().substr(0, 10));
  CHECK_FALSE((cut.get(i) && cut.get(s)));  // the string's length points past the end
}

TEST_CASE("isolated_read: the child's Status, warnings and reply reach the parent") {
  Wire reply;
  Status st = read_isolated("some.h5", "libtest", [](Wire& w) {
    w.put(std::vector<double>{3.25});
    Status s;
    s.warnings.push_back("a warning");
    return s;
  }, reply);
  REQUIRE(st.ok());
  CHECK(st.warnings == std::vector<std::string>{"a warning"});
  std::vector<double> v;
  REQUIRE(reply.get(v));
  CHECK(v == std::vector<double>{3.25});

  st = read_isolated("some.h5", "libtest", [](Wire&) {
    return Status::input("no dataset 'x'", SourceLoc::whole("some.h5"));
  }, reply);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].kind == ErrorKind::Input);
  CHECK(st.errors[0].loc.file() == "some.h5");
  CHECK(st.to_string().find("some.h5: error: no dataset 'x'") != std::string::npos);
}

TEST_CASE("isolated_read: a reader that crashes, never finishes or runs out of memory is an error naming the file") {
  Wire reply;
  Status st = read_isolated("crashing.h5", "libtest", [](Wire&) -> Status { std::abort(); }, reply);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "crashing.h5: error: cannot read this file: libtest crashed on it (signal 6"));

  {
    ScopedEnv limit("ANASIM_READ_TIMEOUT", "0.5");
    const auto t0 = std::chrono::steady_clock::now();
    st = read_isolated("looping.h5", "libtest", [](Wire&) -> Status {
      for (;;) ::pause();
    }, reply);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "looping.h5: error: cannot read this file: libtest did not finish reading it "
                                   "within 0.5 s"));
    CHECK(seconds_since(t0) < 10);
  }

  st = read_isolated("huge.h5", "libtest", [](Wire& w) {
    std::vector<char> v(std::size_t{1} << 44);  // 16 TiB: beyond the memory limit and any machine
    w.put(v.size());
    return Status();
  }, reply);
  REQUIRE_FALSE(st.ok());
  // (Under the address sanitizer, which sets no address-space limit, the child stops with its report instead.)
  CHECK((contains(st.to_string(), "huge.h5: error: reading it needs more memory than the reader's limit") ||
         contains(st.to_string(), "huge.h5: error: cannot read this file: the libtest reader process exited")));

  // ANASIM_READ_ISOLATION=0: the reader runs in this process (here: its effect on a local is visible).
  ScopedEnv off("ANASIM_READ_ISOLATION", "0");
  int calls = 0;
  st = read_isolated("x.h5", "libtest", [&](Wire&) { ++calls; return Status(); }, reply);
  CHECK(st.ok());
  CHECK(calls == 1);
}

TEST_CASE("isolated_read: model files that crash or hang libhdf5 are errors naming the file") {
  // Found by fuzz/fuzz_model (libhdf5 1.10.8, global heap of the 'format' string attribute): one segfaults in
  // H5HG_read, one loops forever in H5HG__cache_heap_deserialize. The Keras pair is a Keras seed with its global
  // heap damaged as damage_global_heap does (read by import_keras through 'model_config').
  ScopedEnv limit("ANASIM_READ_TIMEOUT", "1");
  nn::Mlp net;
  Status st = nn::load_model(kBad + "model_heap_crash.h5", net);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "model_heap_crash.h5: error: cannot read this file: libhdf5 crashed on it"));
  CHECK(net.layers.empty());
  st = nn::load_model(kBad + "model_heap_hang.h5", net);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "model_heap_hang.h5: error: cannot read this file: libhdf5 did not finish"));
  st = nn::import_keras(kBad + "keras_heap_crash.h5", net);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "keras_heap_crash.h5: error: cannot read this file: libhdf5 crashed on it"));
  st = nn::import_keras(kBad + "keras_heap_hang.h5", net);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "keras_heap_hang.h5: error: cannot read this file: libhdf5 did not finish"));

  // The command line: exit 2 and the message.
  int rc = 0;
  std::string out = nn_test::run("nn eval --model '" + kBad + "model_heap_crash.h5'", rc);
  CHECK(rc == 2);
  CHECK(contains(out, "model_heap_crash.h5: error: cannot read this file: libhdf5 crashed on it"));
  out = nn_test::shell("ANASIM_READ_TIMEOUT=1 " ANASIM_BINARY " nn import-keras '" + kBad +
                           "keras_heap_hang.h5' -o /dev/null",
                       rc);
  CHECK(rc == 2);
  CHECK(contains(out, "keras_heap_hang.h5: error: cannot read this file: libhdf5 did not finish reading it "
                      "within 1 s"));
}

TEST_CASE("isolated_read: checkpoint and crossbar conductance files go through the isolation too") {
  const fs::path dir = test_support::scratch_dir("isolated_read", "checkpoint");
  RunIdentity id;
  id.add("command", "test");
  dist::ItemTable table(3);
  table.values[1] = {1.0, 2.0};
  table.done[1] = 1;
  for (bool hang : {false, true}) {
    const fs::path p = dir / (hang ? "hang.h5" : "crash.h5");
    REQUIRE(save_checkpoint(p.string(), id, table).ok());
    dist::ItemTable back(3);
    long resumed = 0;
    REQUIRE(load_checkpoint(p.string(), id, back, &resumed).ok());  // intact: read back through the child
    CHECK(resumed == 1);
    CHECK(back.values[1] == std::vector<double>{1.0, 2.0});
    CHECK(back.done == std::vector<unsigned char>{0, 1, 0});
    damage_global_heap(p, hang);
    ScopedEnv limit("ANASIM_READ_TIMEOUT", "1");
    dist::ItemTable none(3);
    const Status st = load_checkpoint(p.string(), id, none, &resumed);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), hang ? "did not finish reading it within 1 s" : "libhdf5 crashed on it"));
    CHECK(none.count_done() == 0);
  }
  // The crossbar's g_file reader: its time limit applies (no damaged file needed to show that it runs isolated).
  int rows = 0, cols = 0;
  std::vector<double> g;
  {
    ScopedEnv limit("ANASIM_READ_TIMEOUT", "1e-9");
    const Status st = read_conductances_hdf5((dir / "crash.h5").string(), "/g", rows, cols, g);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.errors[0].message, "crash.h5': cannot read this file: libhdf5 did not finish"));
  }
  const Status st = read_conductances_hdf5((dir / "crash.h5").string(), "/g", rows, cols, g);
  CHECK(contains(st.errors[0].message, "has no dataset '/g'"));
}

TEST_CASE("isolated_read: models load the same through the child, also from many threads at once") {
  const std::string shipped = ANASIM_SOURCE_DIR "/data/mlp_784_128_10.h5";
  nn::Mlp direct, isolated;
  nn::ModelInfo info_direct, info_isolated;
  {
    ScopedEnv off("ANASIM_READ_ISOLATION", "0");
    REQUIRE(nn::load_model(shipped, direct, &info_direct).ok());
  }
  REQUIRE(nn::load_model(shipped, isolated, &info_isolated).ok());
  CHECK(same_nets(direct, isolated));  // bit for bit
  CHECK(info_isolated.test_accuracy == info_direct.test_accuracy);
  CHECK(info_isolated.seed == info_direct.seed);
  CHECK(info_isolated.created_by == info_direct.created_by);

  // Four threads loading at once (each fork copies only its own thread; every reply pipe is closed in the other
  // children), one of them the crashing file, while OpenMP's worker threads exist in the parent.
  #pragma omp parallel
  { (void)omp_get_thread_num(); }
  std::vector<int> good(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3; ++k) {
        nn::Mlp net;
        if (t == 3) {
          good[t] += contains(nn::load_model(kBad + "model_heap_crash.h5", net).to_string(), "libhdf5 crashed on it");
        } else {
          good[t] += nn::load_model(shipped, net).ok() && same_nets(net, direct);
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(good == std::vector<int>{3, 3, 3, 3});

  // From inside an OpenMP parallel region.
  int ok = 0;
  #pragma omp parallel for reduction(+ : ok)
  for (int k = 0; k < 2; ++k) {
    nn::Mlp net;
    ok += nn::load_model(shipped, net).ok() && same_nets(net, direct);
  }
  CHECK(ok == 2);
}
