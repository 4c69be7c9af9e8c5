// The bad-input suite: runs `anasim run FILE` on every malformed netlist in tests/bad_inputs/ and checks the
// exit code (2), the located message (file:line:col, the source line, a caret under the column, the expected
// text) and that nothing crashed, hung or tripped a sanitizer.
//
// Each file states its expectation on its first line (SPICE: the title line; YAML: a comment):
//   * expect: LINE:COL: message fragment      (SPICE)
//   # expect: LINE:COL: message fragment      (YAML)
//   ... expect: -: message fragment           (no line: "FILE: error: ..." for the file as a whole)
// Files that cannot carry a comment (empty, binary) put that line in FILE.expect instead.
#include <doctest/doctest.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

const char* const kBadInputs = ANASIM_SOURCE_DIR "/tests/bad_inputs";
constexpr int kBadInputExit = 2;    // cli/main.cpp: 2 = bad input
constexpr int kTimeoutSeconds = 60;  // generous for the sanitizer build

struct RunResult {
  bool exited = false;  // exited normally (not signalled, not timed out)
  int code = -1;        // exit code, or the signal number if !exited
  bool timed_out = false;
  std::string err;      // stderr
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n' || c == '\r') {
      out.push_back(cur);
      cur.clear();
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Runs ANASIM_BINARY with `args` in directory `dir`; stdout is discarded, stderr captured.
RunResult run_anasim(const std::string& dir, const std::vector<std::string>& args) {
  RunResult r;
  char tmpl[] = "/tmp/anasim_bad_input_XXXXXX";
  int errfd = mkstemp(tmpl);
  REQUIRE(errfd >= 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0 || chdir(dir.c_str()) != 0) _exit(127);
    dup2(devnull, STDOUT_FILENO);
    dup2(errfd, STDERR_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(ANASIM_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ANASIM_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutSeconds);
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(errfd);
  r.err = read_file(tmpl);
  std::remove(tmpl);
  if (!r.timed_out && WIFEXITED(status)) {
    r.exited = true;
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.code = WTERMSIG(status);
  }
  return r;
}

bool sanitizer_report(const std::string& err) {
  for (const char* m : {"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:"})
    if (err.find(m) != std::string::npos) return true;
  return false;
}

struct Expectation {
  bool found = false;
  int line = 0, col = 0;  // 0 = the file as a whole
  std::string fragment;
};

// Parses "... expect: L:C: fragment" or "... expect: -: fragment" from the first line of the file (or FILE.expect).
Expectation expectation_of(const fs::path& file) {
  Expectation e;
  std::string first;
  fs::path side = file.string() + ".expect";
  std::vector<std::string> lines = lines_of(read_file(fs::exists(side) ? side : file));
  if (!lines.empty()) first = lines[0];
  size_t k = first.find("expect:");
  if (k == std::string::npos) return e;
  std::string spec = first.substr(k + 7);
  spec.erase(0, spec.find_first_not_of(' '));
  if (spec.compare(0, 2, "-:") == 0) {
    e.fragment = spec.substr(2);
  } else {
    int consumed = 0;
    if (std::sscanf(spec.c_str(), "%d:%d:%n", &e.line, &e.col, &consumed) != 2 || consumed == 0) return e;
    e.fragment = spec.substr(static_cast<size_t>(consumed));
  }
  e.fragment.erase(0, e.fragment.find_first_not_of(' '));
  e.found = !e.fragment.empty();
  return e;
}

// The caret line Diag::to_string prints under column `col` of `text`.
std::string caret_line(const std::string& text, int col) {
  std::string s = "  ";
  for (int i = 1; i < col && i <= static_cast<int>(text.size()); ++i) s += text[i - 1] == '\t' ? '\t' : ' ';
  return s + "^";
}

std::vector<fs::path> bad_input_files() {
  std::vector<fs::path> files;
  for (const auto& de : fs::directory_iterator(kBadInputs)) {
    std::string ext = de.path().extension().string();
    if (de.is_regular_file() && (ext == ".cir" || ext == ".yaml")) files.push_back(de.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Stops the test with a clear message if the anasim executable was not built (exec would fail with 127).
void require_binary() {
  REQUIRE_MESSAGE(access(ANASIM_BINARY, X_OK) == 0, "cannot execute " << ANASIM_BINARY << " (is the anasim target built?)");
}

void check_clean_exit(const RunResult& r) {
  CHECK_MESSAGE(!r.timed_out, "anasim did not finish within " << kTimeoutSeconds << " s");
  CHECK_MESSAGE(r.exited, "anasim was killed by signal " << r.code);
  CHECK_MESSAGE(!sanitizer_report(r.err), "sanitizer report:\n" << r.err);
  CHECK(r.code == kBadInputExit);
}

}  // namespace

TEST_CASE("bad inputs: every malformed netlist gives exit 2 and a located message") {
  require_binary();
  std::vector<fs::path> files = bad_input_files();
  CHECK(files.size() >= 36);
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    INFO("bad input: tests/bad_inputs/" << name);
    Expectation e = expectation_of(file);
    REQUIRE_MESSAGE(e.found, "no 'expect: LINE:COL: fragment' on the first line (or in " << name << ".expect)");
    RunResult r = run_anasim(kBadInputs, {"run", name});
    INFO("stderr:\n" << r.err);
    check_clean_exit(r);

    // The first error is the expected one.
    std::vector<std::string> out = lines_of(r.err);
    size_t first = 0;
    while (first < out.size() && out[first].find("error: ") == std::string::npos) ++first;
    REQUIRE_MESSAGE(first < out.size(), "no 'error:' line on stderr");
    const std::string& head = out[first];
    std::string where = e.line > 0 ? name + ":" + std::to_string(e.line) + ":" + std::to_string(e.col) + ": error: "
                                   : name + ": error: ";
    CHECK_MESSAGE(head.compare(0, where.size(), where) == 0, "expected the first error to start with '" << where << "'");
    CHECK_MESSAGE(head.find(e.fragment, std::min(where.size(), head.size())) != std::string::npos,
                  "expected the message to contain '" << e.fragment << "'");
    if (e.line == 0) continue;

    // The offending source line, then a caret under the column.
    std::vector<std::string> src = lines_of(read_file(file));
    REQUIRE(e.line <= static_cast<int>(src.size()));
    const std::string& text = src[e.line - 1];
    REQUIRE_MESSAGE(first + 2 < out.size(), "expected the source line and a caret after the message");
    CHECK(out[first + 1] == "  " + text);
    CHECK(out[first + 2] == caret_line(text, e.col));
  }
}

TEST_CASE("bad inputs: a netlist that does not exist") {
  require_binary();
  for (const char* name : {"no_such_netlist.cir", "no_such_netlist.yaml"}) {
    INFO("file: " << name);
    REQUIRE(!fs::exists(fs::path(kBadInputs) / name));
    RunResult r = run_anasim(kBadInputs, {"run", name});
    INFO("stderr:\n" << r.err);
    check_clean_exit(r);
    CHECK(r.err.find(std::string("'") + name + "'") != std::string::npos);
    CHECK(r.err.find("No such file or directory") != std::string::npos);
  }
}
