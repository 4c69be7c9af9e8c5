// SPICE deck reader: title line, comments, '+' continuations, device lines driven by the device catalog,
// and the dot cards anasim understands (.model .subckt .param .include .op .dc .tran .ac .options .ic .end).
// Every object keeps the location of its first character, even across continuation lines.
//
// Decks of 10^5..10^6 lines are common (flattened crossbars), so the reader keeps per-line work small: the file
// is lower-cased once and a logical line is a view into it (copied only when '+' lines are joined), tokens are
// views into the line, positions come from one segment per physical line, duplicate-name checks hash names to
// indices, and objects are built in place in the parsed netlist. Error messages are formatted only on errors.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include "engine/device_query.hpp"
#include "engine/expr.hpp"
#include "engine/measure.hpp"
#include "engine/name_index.hpp"
#include "engine/parse.hpp"

namespace anasim {
namespace {

constexpr int kMaxErrors = 20;

// Character classes, looked up in a table by the scanners. Spaces are std::isspace of the "C" locale (anasim
// never calls setlocale); a NUL byte is an ordinary character.
enum : unsigned char {
  kSpace = 1,    // ' ' \t \n \v \f \r
  kSep = 2,      // = ( ) ,  end a word (not std::strchr: it would also match a NUL byte, giving an empty token)
  kGroup = 4,    // { } ' "  group a word or an expression
  kComment = 8,  // ; $      may start an inline comment
};
constexpr std::array<unsigned char, 256> make_char_classes() {
  std::array<unsigned char, 256> t{};
  for (unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) t[c] = kSpace;
  for (unsigned char c : {'=', '(', ')', ','}) t[c] = kSep;
  for (unsigned char c : {'{', '}', '\'', '"'}) t[c] = kGroup;
  for (unsigned char c : {';', '$'}) t[c] = kComment;
  return t;
}
constexpr std::array<unsigned char, 256> kCharClass = make_char_classes();
unsigned char char_class(char c) { return kCharClass[static_cast<unsigned char>(c)]; }

bool is_space(char c) { return char_class(c) == kSpace; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// The characters that matter to comment_start: ; $ { } ' " (written without the table so that it vectorizes).
unsigned char is_comment_or_group(char c) {
  return (c == ';') | (c == '$') | (c == '{') | (c == '}') | (c == '\'') | (c == '"');
}
// Position of the first of ; $ { } ' " in s at or after i, or s.size(). Scans blocks of 32 characters at a
// time: most lines of a large deck have none of these.
size_t find_comment_or_group(std::string_view s, size_t i) {
  const char* p = s.data();
  size_t n = s.size();
  for (; i + 32 <= n; i += 32) {
    unsigned char any = 0;
    for (size_t k = 0; k < 32; ++k) any |= is_comment_or_group(p[i + k]);
    if (any) break;
  }
  while (i < n && !is_comment_or_group(p[i])) ++i;
  return i;
}

// A source file being read: its registered text (SourceLocs point into it) and a lower-case copy.
struct SrcFile {
  const SourceFile* src = nullptr;
  std::string lower;     // src->text() in lower case (same offsets)
  bool has_nul = false;  // the text contains a NUL byte
  std::string_view text() const { return src->text(); }
  size_t n_lines() const { return src->spans().size(); }
  // physical line i (0-based): offset into text() and length without terminator, and its text
  std::pair<size_t, size_t> span(size_t i) const { return src->spans()[i]; }
  std::string_view line(size_t i) const { return text().substr(span(i).first, span(i).second); }
  const std::string& path() const { return src->path(); }
};

// Registers a file's text and fills f: lines, lower-case copy, NUL flag.
void load(SrcFile& f, const std::string& path, std::string text) {
  f.src = SourceFile::add(path, std::move(text));
  const std::string_view t = f.text();
  f.has_nul = std::memchr(t.data(), '\0', t.size()) != nullptr;
  size_t n = t.size();
  f.lower.resize(n);
  const char* in = t.data();
  char* out = &f.lower[0];
  for (size_t k = 0; k < n; ++k) out[k] = lower(in[k]);
}

// One logical line: physical lines joined at '+' continuations, comments removed. Positions come from one
// segment per physical line: character `off` of a segment starting at seg.off is at seg.line, seg.col + (off -
// seg.off). The buffers are reused from line to line.
struct LLine {
  struct Seg {
    size_t off;  // first character of the segment in text (for segs[1...]: the ' ' that replaces the '+')
    int line;    // its 1-based physical line
    int col;     // its 1-based column
  };
  const SrcFile* file = nullptr;
  std::string_view text;  // lower-case: a view into file->lower, or into joined
  std::string joined;     // the text of a line with continuations
  std::vector<Seg> segs;  // in order of off; segs[0].off == 0
  int end_line = 0;       // position just after the last character
  int end_col = 0;
  // The line in its original case (file names in .include, .title), rebuilt from the source.
  std::string raw() const {
    std::string r(text.size(), ' ');
    for (size_t k = 0; k < segs.size(); ++k) {
      size_t b = segs[k].off + (k > 0), e = k + 1 < segs.size() ? segs[k + 1].off : text.size();
      std::string_view src = file->line(static_cast<size_t>(segs[k].line) - 1);
      src.copy(&r[b], e - b, static_cast<size_t>(segs[k].col) - 1 + (k > 0));
    }
    return r;
  }
};

enum class Tk { Word, Eq, LParen, RParen, Comma };

struct Token {
  Tk kind = Tk::Word;
  size_t off = 0, len = 0;    // into LLine::text
  bool space_before = false;  // whitespace (or line start) precedes the token
  bool grouped = false;       // a word containing { } ' or " (not allowed in device and node names)
};

using Tokens = std::vector<Token>;

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// Strips ';' and '$ ' inline comments (outside braces and quotes). Returns the kept prefix length.
size_t comment_start(std::string_view s) {
  int brace = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!(char_class(c) & (kGroup | kComment))) continue;  // the only characters that change the state
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}') {
      if (brace > 0) --brace;
    } else if (brace == 0 && c == ';') {
      return i;
    } else if (brace == 0 && c == '$' && (i == 0 || is_space(s[i - 1])) && (i + 1 == s.size() || is_space(s[i + 1]))) {
      return i;
    }
  }
  return s.size();
}

std::string first_defined(const SourceLoc& first, const SourceLoc& here) {
  if (first.file() == here.file()) return fmt::format("first defined at line {}", first.line);
  return fmt::format("first defined at {}:{}", first.file(), first.line);
}

const char* const kSourceKeywords[] = {"dc", "ac", "pulse", "sin", "exp", "pwl", "am", "sffm", "distof1", "distof2"};

bool is_source_keyword(std::string_view w) {
  for (const char* k : kSourceKeywords)
    if (w == k) return true;
  return false;
}

struct ListSpec {
  const char* name;
  size_t min, max;
  const char* args;
};
const ListSpec kListSpecs[] = {
    {"pulse", 2, 8, "v1 v2 [td tr tf pw per np]"},
    {"am", 2, 7, "va vo [mf fc td phasec phases]"},
    {"sffm", 2, 7, "vo va [fc mdi fs phasec phases]"},
    {"sin", 2, 6, "vo va [freq td theta phase]"},
    {"exp", 2, 6, "v1 v2 [td1 tau1 td2 tau2]"},
    {"pwl", 2, 100000000, "t1 v1 t2 v2 ..."},
};

// The text of an error-message fragment: a string, or a callable that formats one (only called on an error,
// so the common path formats nothing).
template <class What>
std::string what_text(const What& w) {
  if constexpr (std::is_invocable_v<const What&>)
    return w();
  else
    return std::string(w);
}

// The names defined so far, for duplicate checks: NameIndex (engine/name_index.hpp) into the vector that holds
// the named objects (out_.devices, out_.models, ...). The first definition of a name is kept.

class SpiceParser {
 public:
  SpiceParser(const DeviceCatalog& cat, ParsedNetlist& out) : cat_(cat), out_(out) { index_top_level(); }

  // Parses the lines of one file. `has_title`: the first line is the deck title (top-level file only).
  void parse_text(const std::string& path, std::string text, bool has_title, int depth) {
    files_.emplace_back();
    SrcFile& f = files_.back();
    load(f, path, std::move(text));
    size_t first = 0;
    if (has_title) {
      if (f.n_lines() > 0) out_.title = trim(f.line(0));
      first = 1;
    }
    if (depth == 0 && out_.devices.empty()) reserve_devices(f.n_lines());  // a flat deck: mostly devices
    parse_lines(f, first, f.n_lines(), depth);
  }

  // Checks done once the whole deck is read, then .func calls expanded and nested subcircuits resolved.
  void finish() {
    for (size_t k = open_subs_.size(); k-- > 0 && !too_many_errors();) {
      const SubcktDef& s = out_.subckts[open_subs_[k]];
      err(s.loc, fmt::format("missing .ends for .subckt '{}'", s.name));
    }
    for (size_t k = ifs_.size(); k-- > 0 && !too_many_errors();)
      err(ifs_[k].loc, "missing .endif for this .if");
    control_analyses();
    check_saved_currents();
    check_device_refs();
    if (save_all_) out_.outputs.clear();
    if (!out_.outputs.empty())  // a .save list keeps what .meas reads, as in ngspice
      for (std::string& sig : measure_signals(out_.measures))
        if (std::find(out_.outputs.begin(), out_.outputs.end(), sig) == out_.outputs.end())
          out_.outputs.push_back(std::move(sig));
    expand_all_funcs();
    if (nested_) resolve_nested_subckts();
  }

  Status status() const { return st_; }

 private:
  void reserve_devices(size_t n) {
    out_.devices.reserve(n);
    top_devices_.reserve(n);
  }

  // Reads lines [first, last) of f at include depth `depth`.
  void parse_lines(const SrcFile& f, size_t first, size_t last, int depth) {
    // Logical lines are read one at a time: a line is complete when the next non-comment line does not start
    // with '+'. A '+' with no preceding line can only occur before the first line, so the errors come out in
    // file order.
    LLine L;
    L.file = &f;
    Tokens toks;
    bool open = false;   // L holds a line not yet processed
    size_t special = 0;  // position in f.text of the next ; $ { } ' " at or after the current line
    for (size_t i = first; i < last; ++i) {
      std::string_view s = f.line(i);
      size_t at_file = f.span(i).first;  // where s starts in f.text and f.lower
      int lineno = static_cast<int>(i) + 1;
      size_t b = 0;
      while (b < s.size() && is_space(s[b])) ++b;
      if (b == s.size() || s[b] == '*') continue;  // blank or comment line
      if (special < at_file) special = find_comment_or_group(f.text(), at_file);
      size_t e = special < at_file + s.size() ? comment_start(s) : s.size();
      if (e <= b) continue;  // only an inline comment (s[b] is the first non-space character)
      bool cont = s[b] == '+';
      if (cont) {
        if (!open) {
          err(phys_loc(f, lineno, static_cast<int>(b) + 1), "continuation line '+' without a preceding line");
          continue;
        }
        ++b;
        if (L.text.data() != L.joined.data()) L.joined.assign(L.text);
        L.segs.push_back(LLine::Seg{L.joined.size(), lineno, static_cast<int>(b)});  // the '+' becomes a separator
        L.joined += ' ';
        L.joined.append(f.lower, at_file + b, e - b);
        L.text = L.joined;
      } else {
        if (open) {
          if (too_many_errors()) return;
          if (!process(L, depth, toks)) return;  // .end
        }
        open = true;
        L.text = std::string_view(f.lower.data() + at_file + b, e - b);
        L.segs.clear();
        L.end_line = 0;
        L.segs.push_back(LLine::Seg{0, lineno, static_cast<int>(b) + 1});
      }
      size_t last = e;  // one past the last non-space character kept (b if none)
      while (last > b && is_space(s[last - 1])) --last;
      if (last > b || !cont || L.end_line == 0) {
        L.end_line = lineno;
        L.end_col = static_cast<int>(last) + 1;
      }
    }
    if (open && !too_many_errors()) process(L, depth, toks);
  }

  const DeviceCatalog& cat_;
  ParsedNetlist& out_;
  Status st_;
  std::deque<SrcFile> files_;  // a deque: LLine::file stays valid while includes are appended
  int cur_sub_ = -1;  // index into out_.subckts while inside .subckt (the innermost one)
  std::vector<int> open_subs_;          // the .subckt definitions open, outermost first (indices into out_.subckts)
  std::vector<std::string> open_short_;  // their names as written (a nested one is stored as "<parent>/<name>")
  bool nested_ = false;                  // a .subckt was defined inside another
  // A library file read for one section (.lib FILE SECTION): `want` is the section (empty: an ordinary file).
  struct LibState {
    std::string want;
    bool in_want = false;  // inside the wanted section
    bool found = false;    // the wanted section was seen
    bool skip = false;     // inside a section definition nobody asked for (until .endl)
  };
  LibState lib_;
  struct IfFrame {            // one open .if
    bool parent_active = true;  // the lines around the .if are read
    bool taken = false;         // a branch was taken already
    bool active = false;        // the current branch is read
    bool seen_else = false;
    SourceLoc loc;
  };
  std::vector<IfFrame> ifs_;
  Scope if_scope_;         // top-level .param values for .if conditions
  size_t if_params_ = 0;   // out_.params[0, if_params_) are in if_scope_
  struct UserFunc {        // a .func definition
    std::vector<std::string> args;
    std::string body;      // lower-case expression text
    SourceLoc loc;
  };
  // .func definitions by scope: "" the top level, else the .subckt ("parent/name" when nested) they are written in;
  // an expression of a subcircuit sees its own, then its parents', then the top level's (ngspice's numparam scoping).
  std::map<std::string, std::map<std::string, UserFunc>> funcs_;
  bool save_all_ = false;  // .save all
  std::vector<std::pair<std::string, SourceLoc>> saved_currents_;  // .save i(name): the name and where, for finish()
  std::vector<std::pair<std::string, SourceLoc>> device_refs_;  // @device[name] in .save/.meas, and where
  int scratch_sub_ = -1;  // a duplicate .subckt being read but not kept; removed at its .ends
  // ngspice's .control script, run as ngspice -b runs it: its analysis commands in order (`run`: the deck's dot
  // analyses), then, unless it reached quit/exit, the dot analyses once more. See control_line().
  bool in_control_ = false;
  bool control_seen_ = false;   // the deck has a .control block
  bool control_quit_ = false;   // quit/exit reached: later control lines never run, no batch run at the end
  std::vector<AnalysisSpec> control_analyses_;  // op/dc/tran/ac commands; kind Extension with no type = `run`
  NameIndex top_devices_;  // into out_.devices
  NameIndex sub_devices_;  // into out_.subckts[cur_sub_].devices
  NameIndex models_;       // into out_.models
  NameIndex sub_models_;   // into out_.subckts[cur_sub_].models
  NameIndex subckts_;      // into out_.subckts
  std::array<const DeviceType*, 256> type_of_letter_{};  // cat_.find of a one-letter key, once looked up
  std::array<bool, 256> type_looked_up_{};
  std::vector<size_t> bare_;  // scratch for subckt_instance

  // Adds the top-level names already in out_ (from an including file, or a YAML include just read).
  void index_top_level() {
    for (size_t k = 0; k < out_.devices.size(); ++k)
      top_devices_.try_emplace(out_.devices[k].name, k, names_of(out_.devices));
    for (size_t k = 0; k < out_.models.size(); ++k) models_.try_emplace(out_.models[k].name, k, names_of(out_.models));
    for (size_t k = 0; k < out_.subckts.size(); ++k)
      subckts_.try_emplace(out_.subckts[k].name, k, names_of(out_.subckts));
  }

  const DeviceType* type_of_letter(char c) {
    auto u = static_cast<unsigned char>(c);
    if (!type_looked_up_[u]) {
      type_of_letter_[u] = cat_.find(std::string(1, c));
      type_looked_up_[u] = true;
    }
    return type_of_letter_[u];
  }

  bool too_many_errors() const { return static_cast<int>(st_.errors.size()) >= kMaxErrors; }

  bool err(const SourceLoc& loc, std::string msg) {
    if (static_cast<int>(st_.errors.size()) < kMaxErrors) st_.merge(Status::input(std::move(msg), loc));
    if (static_cast<int>(st_.errors.size()) == kMaxErrors)
      st_.warnings.push_back(fmt::format("stopped after {} errors", kMaxErrors));
    return false;
  }
  void warn(const SourceLoc& loc, const std::string& msg) {
    st_.warnings.push_back(fmt::format("{}:{}: {}", loc.file(), loc.line, msg));
  }

  // ---- locations ------------------------------------------------------------------------------

  // The set_ forms fill an existing SourceLoc (an element already in place in the parsed netlist).
  static void set_phys_loc(SourceLoc& l, const SrcFile& f, int line, int col) { l = SourceLoc(f.src, line, col); }
  static SourceLoc phys_loc(const SrcFile& f, int line, int col) {
    SourceLoc l;
    set_phys_loc(l, f, line, col);
    return l;
  }
  static void set_at(SourceLoc& l, const LLine& L, size_t off) {
    if (off < L.text.size() && L.segs.size() == 1) {  // the common case: a statement on one physical line
      l = SourceLoc(L.file->src, L.segs[0].line, L.segs[0].col + static_cast<int>(off));
      return;
    }
    if (off >= L.text.size()) return set_phys_loc(l, *L.file, L.end_line, L.end_col);
    auto seg = std::upper_bound(L.segs.begin(), L.segs.end(), off,
                                [](size_t o, const LLine::Seg& s) { return o < s.off; }) - 1;
    set_phys_loc(l, *L.file, seg->line, seg->col + static_cast<int>(off - seg->off));
  }
  static SourceLoc at(const LLine& L, size_t off) {
    SourceLoc l;
    set_at(l, L, off);
    return l;
  }
  static SourceLoc at(const LLine& L, const Token& t) { return at(L, t.off); }
  static SourceLoc end_of(const LLine& L) { return phys_loc(*L.file, L.end_line, L.end_col); }
  // Location of token i, or the end of the line if there is no token i.
  static SourceLoc at_or_end(const LLine& L, const Tokens& t, size_t i) {
    return i < t.size() ? at(L, t[i]) : end_of(L);
  }

  // The (lower-case) text of a token, a view into L.text.
  static std::string_view tok_text(const LLine& L, const Token& t) {
    return std::string_view(L.text.data() + t.off, t.len);
  }
  static std::string describe(const LLine& L, const Tokens& t, size_t i) {
    return i < t.size() ? fmt::format("'{}'", tok_text(L, t[i])) : std::string("end of line");
  }

  // ---- tokens ----------------------------------------------------------------------------------

  // Splits a logical line into words, '=', '(', ')' and ','. {..} groups and quoted strings stay inside
  // one word even when they contain spaces. `toks` is cleared first.
  bool tokenize(const LLine& L, Tokens& toks) {
    toks.clear();
    std::string_view s = L.text;
    size_t i = 0, n = s.size();
    bool space = true;
    while (i < n) {
      char c = s[i];
      unsigned char cc = char_class(c);
      if (cc == kSpace) {
        space = true;
        ++i;
        continue;
      }
      Token t;
      t.off = i;
      t.space_before = space;
      space = false;
      t.len = 1;
      if (cc == kSep) {
        t.kind = c == '=' ? Tk::Eq : c == '(' ? Tk::LParen : c == ')' ? Tk::RParen : Tk::Comma;
      } else {
        size_t j = i;
        for (;;) {
          while (j < n && !(char_class(s[j]) & (kSpace | kSep | kGroup))) ++j;
          if (j >= n || char_class(s[j]) != kGroup) break;
          t.grouped = true;
          if (s[j] == '{') {
            int depth = 0;
            size_t k = j;
            for (; k < n; ++k) {
              if (s[k] == '{') ++depth;
              if (s[k] == '}' && --depth == 0) break;
            }
            if (k >= n) return err(at(L, j), "unbalanced '{': missing '}'");
            j = k + 1;
          } else if (s[j] == '\'' || s[j] == '"') {
            size_t k = s.find(s[j], j + 1);
            if (k == std::string_view::npos) return err(at(L, j), fmt::format("unterminated quote {}", s[j]));
            j = k + 1;
          } else {  // '}'
            return err(at(L, j), "unbalanced '}': no matching '{'");
          }
        }
        t.kind = Tk::Word;
        t.len = j - i;
      }
      i += t.len;
      toks.push_back(t);
    }
    return true;
  }

  static bool is_word(const Tokens& t, size_t i) { return i < t.size() && t[i].kind == Tk::Word; }
  static bool is_named(const Tokens& t, size_t i) {  // name = value
    return is_word(t, i) && i + 1 < t.size() && t[i + 1].kind == Tk::Eq;
  }
  static bool is_value_start(const Tokens& t, size_t i) {
    return i < t.size() && (t[i].kind == Tk::Word || t[i].kind == Tk::LParen) && !is_named(t, i);
  }

  // Reads one value at token i: adjacent tokens with balanced parentheses ("2*(a+b)", "{x + 1}", "1k").
  // `what` (a string, or a callable formatting one) names the expected value in error messages.
  template <class What>
  bool read_value(const LLine& L, const Tokens& t, size_t& i, ValueExpr& v, const What& what) {
    if (i >= t.size()) return err(end_of(L), fmt::format("expected {}, got end of line", what_text(what)));
    if (t[i].kind != Tk::Word && t[i].kind != Tk::LParen)
      return err(at(L, t[i]), fmt::format("expected {}, got '{}'", what_text(what), tok_text(L, t[i])));
    size_t start = i;
    int depth = 0;
    size_t open = i;
    while (i < t.size()) {
      const Token& k = t[i];
      if (i > start && depth == 0 &&
          (k.space_before || k.kind == Tk::Eq || k.kind == Tk::Comma || k.kind == Tk::RParen))
        break;
      if (k.kind == Tk::LParen) {
        if (depth == 0) open = i;
        ++depth;
      } else if (k.kind == Tk::RParen) {
        --depth;
      }
      ++i;
    }
    if (depth > 0) return err(at(L, t[open]), "unbalanced parenthesis: '(' is never closed");
    const Token& last = t[i - 1];
    v.text.assign(L.text.data() + t[start].off, last.off + last.len - t[start].off);
    set_at(v.loc, L, t[start].off);
    return true;
  }

  // name = value at token i (is_named(t, i) must hold).
  bool read_named(const LLine& L, const Tokens& t, size_t& i, ParamAssign& pa) {
    pa.name = tok_text(L, t[i]);
    pa.loc = at(L, t[i]);
    i += 2;
    if (!read_value(L, t, i, pa.values.emplace_back(), [&] { return fmt::format("a value after '{}='", pa.name); })) {
      pa.values.pop_back();
      return false;
    }
    return true;
  }

  // ---- dispatch --------------------------------------------------------------------------------

  // Returns false to stop reading this file (.end). `toks` is scratch space for the tokens.
  bool process(const LLine& L, int depth, Tokens& t) {
    // The card name decides whether the rest of the line is tokenized (.include takes a raw file name).
    std::string_view text(L.text);
    size_t b = 0;
    while (b < text.size() && is_space(text[b])) ++b;
    size_t e = b;  // end of the card word (only needed for dot cards)
    if (in_control_ || (b < text.size() && text[b] == '.'))
      while (e < text.size() && !is_space(text[e])) ++e;
    std::string_view first(text.data() + b, e - b);
    if (in_control_) {
      if (first == ".endc") in_control_ = false;
      else if (!control_quit_ && b < text.size() && text[b] != '*' && text[b] != '#')
        control_line(L, b, first, t);
      return true;
    }
    if (b == text.size()) return true;
    // Deck structure first: .lib sections not selected and branches of .if not taken are skipped whole.
    const std::string_view card0 = text[b] == '.' ? first.substr(0, first.find_first_of("=(),")) : std::string_view();
    if (!lib_.want.empty() && !lib_.in_want) {  // a library file read for one section: only its .lib lines count
      if (card0 == ".lib") lib_section_start(L, e);
      return true;
    }
    if (lib_.skip) {  // inside a .lib section nobody asked for
      if (card0 == ".endl") lib_.skip = false;
      return true;
    }
    if (card0 == ".if" || card0 == ".elseif" || card0 == ".else" || card0 == ".endif") {
      conditional(L, card0, e);
      return true;
    }
    if (!ifs_.empty() && !ifs_.back().active) return true;
    size_t nul = L.file->has_nul ? text.find('\0') : std::string_view::npos;
    if (nul != std::string_view::npos) {
      err(at(L, nul), "unexpected NUL byte; is this a text netlist?");
      return true;
    }
    if (text[b] == '.') {
      // Cards that end in parentheses ("d(") are split by the tokenizer; compare only the card word.
      std::string_view card = first.substr(0, first.find_first_of("=(),"));
      if (card == ".include" || card == ".inc") {
        include(L, b, e, depth);
        return true;
      }
      if (card == ".lib") {
        lib(L, b, e, depth);
        return true;
      }
      if (card == ".endl") {
        if (lib_.in_want) lib_.in_want = false;
        else warn(at(L, b), ".endl without a .lib section");
        return true;
      }
      if (card == ".end") return false;
      if (card == ".control") {
        in_control_ = control_seen_ = true;
        return true;
      }
      if (card == ".title") {
        std::string raw = L.raw();
        out_.title = trim(std::string_view(raw).substr(e));
        return true;
      }
      if (!tokenize(L, t)) return true;
      dot_card(L, t, card);
      return true;
    }
    if (!tokenize(L, t)) return true;
    if (t.empty()) return true;
    device(L, t);
    return true;
  }

  // One command of a .control block (ngspice's script language), the subset real decks use around their
  // analyses: op, dc, tran, ac (as the dot cards) and run; option(s) and save as .options and .save; meas as
  // .meas; quit/exit end the script. Commands that only print, plot or write results, and set/unset of control
  // variables, have no effect here and warn; anything else (let, if, foreach, alter, ...) is a located error.
  // `b` is where the command word `first` starts; the line is tokenized only for the commands read here (the
  // others may hold strings and $variables of the script language).
  void control_line(const LLine& L, size_t b, std::string_view first, Tokens& t) {
    const SourceLoc cloc = at(L, b);
    const std::string cmd(first);
    const bool card = cmd == "op" || cmd == "dc" || cmd == "tran" || cmd == "ac" || cmd == "option" ||
                      cmd == "options" || cmd == "opt" || cmd == "save" || cmd == "meas" || cmd == "measure";
    if (card && (!tokenize(L, t) || t.empty())) return;
    if (cmd == "op" || cmd == "dc" || cmd == "tran" || cmd == "ac") {
      const size_t before = out_.analyses.size();
      dot_card(L, t, "." + cmd);
      for (size_t k = before; k < out_.analyses.size(); ++k) control_analyses_.push_back(std::move(out_.analyses[k]));
      out_.analyses.resize(before);
      return;
    }
    if (cmd == "run") {
      AnalysisSpec run;
      run.kind = AnalysisSpec::Kind::Extension;  // no type: the marker of `run`
      run.loc = cloc;
      control_analyses_.push_back(std::move(run));
      return;
    }
    if (cmd == "option" || cmd == "options" || cmd == "opt") return dot_card(L, t, ".options");
    if (cmd == "save") return dot_card(L, t, ".save");
    if (cmd == "meas" || cmd == "measure") return dot_card(L, t, ".meas");
    if (cmd == "quit" || cmd == "exit") {
      control_quit_ = true;
      return;
    }
    for (const char* shown : {"print", "wrdata", "write", "plot", "gnuplot", "hardcopy", "asciiplot", "echo",
                              "display", "show", "listing", "rusage", "destroy"})
      if (cmd == shown)
        return warn(cloc, fmt::format(".control: '{}' only shows or writes results (anasim writes every analysis to "
                                      "its own outputs): no effect", cmd));
    if (cmd == "set" || cmd == "unset")
      return warn(cloc, fmt::format(".control: '{}' of ngspice's control variables has no effect in anasim", cmd));
    err(cloc, fmt::format(".control command '{}' is not supported (anasim runs op, dc, tran, ac, run, "
                          "option, save, meas, quit and exit, and ignores print, plot, write, wrdata, echo, set "
                          "with a warning)", cmd));
  }

  // The analyses as ngspice -b runs a deck with a .control block: the script's, with `run` standing for the dot
  // analyses, then the dot analyses once more unless the script quit. A deck without one keeps its dot analyses.
  void control_analyses() {
    if (!control_seen_) return;
    std::vector<AnalysisSpec> dot = std::move(out_.analyses), all;
    bool ran = false;
    for (AnalysisSpec& a : control_analyses_) {
      const bool run = a.kind == AnalysisSpec::Kind::Extension && !a.type;
      ran = ran || run;
      if (run) all.insert(all.end(), dot.begin(), dot.end());
      else all.push_back(std::move(a));
    }
    if (!control_quit_) all.insert(all.end(), dot.begin(), dot.end());
    else if (!ran && !dot.empty())
      warn(dot[0].loc, "this analysis is not run: the deck's .control script quits without `run` (as in ngspice)");
    out_.analyses = std::move(all);
  }

  std::vector<DeviceInstance>& cur_devices() {
    return cur_sub_ >= 0 ? out_.subckts[cur_sub_].devices : out_.devices;
  }
  NameIndex& cur_device_names() { return cur_sub_ >= 0 ? sub_devices_ : top_devices_; }

  std::string known_keys() const {
    std::string s;
    for (const DeviceType* d : cat_.all()) s += d->key + " ";
    return s + "x";
  }

  // ---- device lines ----------------------------------------------------------------------------

  void device(const LLine& L, const Tokens& t) {
    if (t[0].kind != Tk::Word) {
      err(at(L, t[0]), fmt::format("expected a device name or a dot card, got '{}'", tok_text(L, t[0])));
      return;
    }
    std::vector<DeviceInstance>& devices = cur_devices();
    DeviceInstance& d = devices.emplace_back();  // built in place; removed again if the line is rejected
    if (!device_fields(L, t, d)) {
      devices.pop_back();
      return;
    }
    auto [first, added] = cur_device_names().try_emplace(d.name, devices.size() - 1, names_of(devices));
    if (!added) {
      err(d.loc, fmt::format("duplicate device name '{}' ({})", d.name, first_defined(devices[first].loc, d.loc)));
      devices.pop_back();
    }
  }

  bool device_fields(const LLine& L, const Tokens& t, DeviceInstance& d) {
    d.name = tok_text(L, t[0]);
    set_at(d.loc, L, t[0].off);
    char c = d.name[0];
    if (!is_alpha(c))
      return err(d.loc, fmt::format("expected a device name (starting with a device letter: {}) or a dot card, got "
                                    "'{}'",
                                    known_keys(), d.name));
    if (t[0].grouped) return err(d.loc, fmt::format("invalid device name '{}'", d.name));
    if (c == 'x') {
      d.type = "x";
      return subckt_instance(L, t, d);
    }
    if ((c == 'e' || c == 'g' || c == 'f' || c == 'h') && behavioural_form(L, t)) return behavioural_controlled(L, t, d);
    const DeviceType* type = type_of_letter(c);
    if (!type) return err(d.loc, fmt::format("unknown device type '{}' (known: {})", c, known_keys()));
    d.type = type->key;
    return typed_device(L, t, *type, d);
  }

  // E/G/F/H written as PSpice and ngspice write behavioural sources: "POLY(n) ..." after the two nodes, or (E, G)
  // "VALUE=expr", "VOL=expr" (E), "CUR=expr" (G).
  static bool behavioural_form(const LLine& L, const Tokens& t) {
    if (!is_word(t, 3)) return false;
    const std::string_view w = tok_text(L, t[3]);
    if (w == "poly") return t.size() > 4 && t[4].kind == Tk::LParen && !t[4].space_before;
    const char c = tok_text(L, t[0])[0];
    return is_named(t, 3) && (w == "value" || (w == "vol" && c == 'e') || (w == "cur" && c == 'g'));
  }

  // A behavioural E/G/F/H as the B source it is: E and H give V=, G and F give I= (the current from the first node
  // through the source to the second, as G and F). VALUE= keeps its expression; POLY(n) controls coeffs becomes
  // the SPICE polynomial p0 + sum p_i x_i + sum_(i<=j) p_ij x_i x_j + ... (terms in that order, each order's index
  // tuples ascending; one coefficient alone is p0, as ngspice reads it), x the controlling voltages v(a,b) (E, G) or source
  // currents i(vname) (F, H).
  bool behavioural_controlled(const LLine& L, const Tokens& t, DeviceInstance& d) {
    const char c = d.name[0];
    d.type = "b";
    for (size_t k = 1; k < 3; ++k)
      if (!node_token(L, t, k, d)) return false;
    const char* out = c == 'e' || c == 'h' ? "v" : "i";
    if (tok_text(L, t[3]) != "poly") {
      if (!read_expression(L, t, 3, d)) return false;
      d.params.back().name = out;  // read_expression named it VALUE/VOL/CUR
      return true;
    }
    const SourceLoc kloc = at(L, t[3]);
    size_t i = 5;
    ValueExpr nv;
    if (!read_value(L, t, i, nv, "the number of controlling quantities in POLY(n)")) return false;
    const std::optional<double> nd = parse_spice_number(nv.text);
    if (!nd || *nd < 1 || *nd > 20 || *nd != std::floor(*nd) || i >= t.size() || t[i].kind != Tk::RParen)
      return err(nv.loc, fmt::format("expected POLY(n) with n a whole number from 1 to 20 in '{}'", d.name));
    ++i;
    const int n = static_cast<int>(*nd);
    const bool voltage_controls = c == 'e' || c == 'g';
    std::vector<std::string> xs;  // the controlling quantities as expression text
    auto skip_punct = [&] {
      while (i < t.size() && (t[i].kind == Tk::Comma || t[i].kind == Tk::LParen || t[i].kind == Tk::RParen)) ++i;
    };
    for (int k = 0; k < n; ++k) {
      std::string names[2];
      for (int m = 0; m < (voltage_controls ? 2 : 1); ++m) {
        skip_punct();
        if (!is_word(t, i) || is_named(t, i))
          return err(at_or_end(L, t, i), fmt::format("expected {} controlling {} after POLY({}) of '{}', got {}",
                                                     voltage_controls ? 2 * n : n,
                                                     voltage_controls ? "nodes" : "source names", n, d.name,
                                                     describe(L, t, i)));
        names[m] = tok_text(L, t[i++]);
      }
      xs.push_back(voltage_controls ? fmt::format("v({},{})", names[0], names[1]) : fmt::format("i({})", names[0]));
    }
    skip_punct();
    std::vector<std::string> coeffs;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      ValueExpr v;
      if (!read_value(L, t, i, v, "a POLY coefficient")) return false;
      std::string x = v.text;
      if (x.size() >= 2 && ((x.front() == '{' && x.back() == '}') || (x.front() == '\'' && x.back() == '\'')))
        x = x.substr(1, x.size() - 2);
      coeffs.push_back("(" + x + ")");
    }
    if (coeffs.empty()) return err(end_of(L), fmt::format("POLY({}) of '{}' has no coefficients", n, d.name));
    std::string expr = coeffs[0];
    std::vector<int> idx;  // the index tuple of the next term, ascending, of the current order
    size_t next = 1;
    for (int order = 1; next < coeffs.size(); ++order) {
      idx.assign(static_cast<size_t>(order), 0);
      for (bool more = true; more && next < coeffs.size();) {
        std::string term = coeffs[next++];
        for (int k : idx) term += "*" + xs[static_cast<size_t>(k)];
        expr += " + " + term;
        int pos = order - 1;  // the next ascending tuple: raise the last index that can, reset those after it
        while (pos >= 0 && idx[static_cast<size_t>(pos)] == n - 1) --pos;
        if (pos < 0) {
          more = false;
        } else {
          const int v = idx[static_cast<size_t>(pos)] + 1;
          for (int k = pos; k < order; ++k) idx[static_cast<size_t>(k)] = v;
        }
      }
    }
    add_param(d, out, false, kloc).values.push_back(ValueExpr{expr, kloc});
    return true;
  }

  bool node_token(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d) {
    std::string_view n = tok_text(L, t[i]);
    if (t[i].grouped) return err(at(L, t[i]), fmt::format("expected a node name, got '{}'", n));
    d.nodes.emplace_back(n);
    set_at(d.node_locs.emplace_back(), L, t[i].off);
    return true;
  }

  // Appends an assignment with no values yet to d.params.
  static ParamAssign& add_param(DeviceInstance& d, std::string_view name, bool is_list, const SourceLoc& loc) {
    ParamAssign& pa = d.params.emplace_back();
    pa.name = name;
    pa.is_list = is_list;
    pa.loc = loc;
    return pa;
  }

  bool typed_device(const LLine& L, const Tokens& t, const DeviceType& type, DeviceInstance& d) {
    size_t i = 1;
    if (type.variadic_pins)
      return err(at(L, t[0]), fmt::format("{} '{}' has a parameter-dependent number of pins and is only available in "
                                          "YAML netlists", type.long_name, tok_text(L, t[0])));
    size_t want = type.pins.size();
    d.nodes.reserve(want);
    d.node_locs.reserve(want);
    for (size_t k = 0; k < want; ++k, ++i) {
      if (!is_word(t, i) || is_named(t, i)) {
        std::string pins;
        for (const std::string& p : type.pins) pins += (pins.empty() ? "" : " ") + p;
        return err(at_or_end(L, t, i), fmt::format("expected {} nodes ({}) for {} '{}', got {}", want, pins,
                                                   type.long_name, d.name, k));
      }
      if (!node_token(L, t, i, d)) return false;
    }
    if (type.needs_control) {
      if (!is_word(t, i) || is_named(t, i))
        return err(at_or_end(L, t, i), fmt::format("expected the name of the controlling voltage source after the "
                                                   "nodes of {} '{}', got {}",
                                                   type.long_name, d.name, describe(L, t, i)));
      d.model = tok_text(L, t[i]);
      d.model_loc = at(L, t[i]);
      ++i;
    }
    if (!type.model_type.empty() && !type.model_optional) {
      if (!is_word(t, i) || is_named(t, i))
        return err(at_or_end(L, t, i), fmt::format("expected a .model name (type {}) after the nodes of {} '{}', got {}",
                                                   type.model_type, type.long_name, d.name, describe(L, t, i)));
      d.model = tok_text(L, t[i]);
      d.model_loc = at(L, t[i]);
      ++i;
    }
    if (type.source_syntax) return source_params(L, t, i, type, d);
    size_t npos = 0;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (is_named(t, i)) {
        if (is_expression_param(type, tok_text(L, t[i]))) return read_expression(L, t, i, d);
        if (!read_named(L, t, i, d.params.emplace_back())) return false;
        continue;
      }
      if (!is_value_start(t, i))
        return err(at(L, t[i]), fmt::format("unexpected '{}' in {} '{}'", tok_text(L, t[i]), type.long_name, d.name));
      // A bare word naming a flag parameter ("off") sets it.
      if (t[i].kind == Tk::Word && (i + 1 >= t.size() || t[i + 1].space_before || t[i + 1].kind != Tk::LParen)) {
        std::string_view w = tok_text(L, t[i]);
        bool flag = false;
        for (const ParamSpec& s : type.params)
          if (s.kind == ParamKind::Flag && w == s.name) flag = true;
        if (flag) {
          ParamAssign& pa = add_param(d, w, false, at(L, t[i]));
          pa.values.push_back(ValueExpr{"1", pa.loc});
          ++i;
          continue;
        }
      }
      // R, C: a bare name among the values names the .model (r1 a b myres l=2u; r1 a b 1k myres).
      if (!type.model_type.empty() && d.model.empty() && is_model_name(L, t, i)) {
        d.model = tok_text(L, t[i]);
        d.model_loc = at(L, t[i]);
        ++i;
        continue;
      }
      if (npos >= type.positional.size()) {
        if (type.positional.empty())
          return err(at(L, t[i]), fmt::format("unexpected value '{}' for {} '{}'; expected name=value parameters",
                                              tok_text(L, t[i]), type.long_name, d.name));
        std::string names;
        for (const std::string& p : type.positional) names += (names.empty() ? "" : " ") + p;
        return err(at(L, t[i]), fmt::format("too many values for {} '{}': expected at most {} ({}), then name=value",
                                            type.long_name, d.name, type.positional.size(), names));
      }
      ParamAssign& pa = d.params.emplace_back();
      ValueExpr& v = pa.values.emplace_back();
      if (!read_value(L, t, i, v, "a value")) return false;
      pa.name = type.positional[npos++];
      pa.loc = v.loc;
    }
    return true;
  }

  // Token i is a name standing alone (letters, digits, '_', '.', '$'; starting with a letter; not a number nor
  // the start of a longer value such as "rval*2").
  bool is_model_name(const LLine& L, const Tokens& t, size_t i) const {
    if (t[i].kind != Tk::Word || t[i].grouped) return false;
    if (i + 1 < t.size() && !t[i + 1].space_before && t[i + 1].kind != Tk::Comma) return false;
    std::string_view w = tok_text(L, t[i]);
    if (w.empty() || !is_alpha(w[0])) return false;
    for (char c : w)
      if (!is_alpha(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '$') return false;
    return true;
  }

  static bool is_expression_param(const DeviceType& type, std::string_view name) {
    for (const ParamSpec& s : type.params)
      if (s.kind == ParamKind::Expr && name == s.name) return true;
    return false;
  }

  // name = expression (B source V= / I=): the expression is the rest of the line, spaces included, as in ngspice.
  bool read_expression(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d) {
    ParamAssign& pa = add_param(d, tok_text(L, t[i]), false, at(L, t[i]));
    if (i + 2 >= t.size())
      return err(end_of(L), fmt::format("expected an expression after '{}=' of '{}'", pa.name, d.name));
    const size_t b = t[i + 2].off;
    size_t e = L.text.size();
    while (e > b && is_space(L.text[e - 1])) --e;
    ValueExpr& v = pa.values.emplace_back();
    v.text.assign(L.text.data() + b, e - b);
    set_at(v.loc, L, b);
    return true;
  }

  // V / I: [DC] v | AC mag [phase] | PULSE(...) | SIN(...) | EXP(...) | PWL(...) | name=value, in any order.
  bool source_params(const LLine& L, const Tokens& t, size_t i, const DeviceType& type, DeviceInstance& d) {
    bool have_dc = false;
    auto keyword_at = [&](size_t k) { return is_word(t, k) && !is_named(t, k) && is_source_keyword(tok_text(L, t[k])); };
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (is_named(t, i)) {
        ParamAssign& pa = d.params.emplace_back();
        if (!read_named(L, t, i, pa)) return false;
        if (pa.name == "dc") have_dc = true;
        continue;
      }
      std::string_view w = is_word(t, i) ? tok_text(L, t[i]) : std::string_view();
      SourceLoc kloc = at(L, t[i]);
      if (w == "trnoise" || w == "trrandom")
        return err(kloc, fmt::format("source function '{}' is not supported (use DC, AC, PULSE, SIN, EXP, PWL, AM or "
                                     "SFFM)", w));
      if (keyword_at(i) && (w == "distof1" || w == "distof2")) {  // [mag [phase]]: inputs of .disto only
        warn(kloc, fmt::format("{} only sets an input of distortion analysis (.disto), which anasim does not run: "
                               "no effect", to_upper(w)));
        ++i;
        for (int k = 0; k < 2 && is_value_start(t, i) && !keyword_at(i); ++k) {
          ValueExpr ignored;
          if (!read_value(L, t, i, ignored, "a DISTOF value")) return false;
          while (i < t.size() && t[i].kind == Tk::Comma) ++i;
        }
        continue;
      }
      if (keyword_at(i) && w == "dc") {
        ++i;
        ParamAssign& pa = add_param(d, "dc", false, kloc);
        if (!read_value(L, t, i, pa.values.emplace_back(), "a value after DC")) return false;
        have_dc = true;
        continue;
      }
      if (keyword_at(i) && w == "ac") {
        ++i;
        ParamAssign& mag = add_param(d, "acmag", false, kloc);
        if (is_value_start(t, i) && !keyword_at(i)) {
          if (!read_value(L, t, i, mag.values.emplace_back(), "the AC magnitude")) return false;
          while (i < t.size() && t[i].kind == Tk::Comma) ++i;
          if (is_value_start(t, i) && !keyword_at(i)) {
            ParamAssign& ph = add_param(d, "acphase", false, at(L, t[i]));  // (mag may have moved)
            if (!read_value(L, t, i, ph.values.emplace_back(), "the AC phase")) return false;
          }
        } else {
          mag.values.push_back(ValueExpr{"1", kloc});  // "AC" alone: magnitude 1
        }
        continue;
      }
      if (keyword_at(i)) {  // pulse sin exp pwl am sffm
        ++i;
        ParamAssign& pa = add_param(d, w, true, kloc);
        bool paren = i < t.size() && t[i].kind == Tk::LParen;
        size_t open = i;
        if (paren) ++i;
        for (;;) {
          while (i < t.size() && t[i].kind == Tk::Comma) ++i;
          if (paren) {
            if (i >= t.size()) return err(at(L, t[open]), "unbalanced parenthesis: '(' is never closed");
            if (t[i].kind == Tk::RParen) {
              ++i;
              break;
            }
          } else if (!is_value_start(t, i) || keyword_at(i)) {
            break;
          }
          if (!read_value(L, t, i, pa.values.emplace_back(),
                          [&] { return fmt::format("a value or ')' in {}(...)", to_upper(w)); }))
            return false;
        }
        for (const ListSpec& s : kListSpecs) {
          if (w != s.name) continue;
          size_t n = pa.values.size();
          if (n < s.min || n > s.max || (w == "pwl" && n % 2 != 0)) {
            std::string range = w == "pwl" ? "an even number of values" : fmt::format("{} to {} values", s.min, s.max);
            return err(kloc, fmt::format("{} takes {} ({}), got {}", to_upper(w), range, s.args, n));
          }
        }
        continue;
      }
      if (!is_value_start(t, i))
        return err(kloc, fmt::format("unexpected '{}' in {} '{}'", tok_text(L, t[i]), type.long_name, d.name));
      if (have_dc)
        return err(kloc, fmt::format("unexpected value '{}' for {} '{}'; expected DC, AC, PULSE, SIN, EXP, PWL, "
                                     "AM, SFFM or name=value",
                                     tok_text(L, t[i]), type.long_name, d.name));
      ParamAssign& pa = add_param(d, "dc", false, kloc);
      if (!read_value(L, t, i, pa.values.emplace_back(), "a value")) return false;
      have_dc = true;
    }
    return true;
  }

  static std::string to_upper(std::string_view v) {
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }

  // X1 n1 n2 ... subname [params:] [p=v ...]
  bool subckt_instance(const LLine& L, const Tokens& t, DeviceInstance& d) {
    size_t i = 1;
    std::vector<size_t>& bare = bare_;  // token indices of the nodes and the subcircuit name
    bare.clear();
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (is_named(t, i) || (is_word(t, i) && tok_text(L, t[i]) == "params:")) break;
      if (!is_word(t, i))
        return err(at(L, t[i]), fmt::format("unexpected '{}' in subcircuit instance '{}'; expected node names, the "
                                            "subcircuit name, then name=value",
                                            tok_text(L, t[i]), d.name));
      bare.push_back(i++);
    }
    if (bare.empty())
      return err(at_or_end(L, t, i), fmt::format("expected nodes and a subcircuit name for subcircuit instance '{}'",
                                                 d.name));
    d.nodes.reserve(bare.size() - 1);
    d.node_locs.reserve(bare.size() - 1);
    for (size_t k = 0; k + 1 < bare.size(); ++k)
      if (!node_token(L, t, bare[k], d)) return false;
    d.model = tok_text(L, t[bare.back()]);
    d.model_loc = at(L, t[bare.back()]);
    if (is_word(t, i) && tok_text(L, t[i]) == "params:") ++i;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (!is_named(t, i))
        return err(at(L, t[i]), fmt::format("expected name=value after the subcircuit name '{}', got '{}'", d.model,
                                            tok_text(L, t[i])));
      if (!read_named(L, t, i, d.params.emplace_back())) return false;
    }
    return true;
  }

  // ---- dot cards -------------------------------------------------------------------------------

  // Reads name=value pairs from token i to the end (commas allowed); `what` names the card.
  bool named_list(const LLine& L, const Tokens& t, size_t i, std::vector<ParamAssign>& out, const std::string& what,
                  bool skip_parens = false) {
    int depth = 0;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (skip_parens && t[i].kind == Tk::LParen && depth == 0) {
        ++depth;
        ++i;
        continue;
      }
      if (skip_parens && t[i].kind == Tk::RParen && depth == 1) {
        --depth;
        ++i;
        continue;
      }
      if (!is_named(t, i)) {
        if (is_word(t, i) && i + 1 < t.size() && t[i + 1].kind == Tk::LParen && !t[i + 1].space_before &&
            what == ".param")
          return err(at(L, t[i]), "function definitions in .param are not supported");
        return err(at(L, t[i]), fmt::format("expected name=value in {}, got '{}'", what, tok_text(L, t[i])));
      }
      ParamAssign pa;
      if (!read_named(L, t, i, pa)) return false;
      out.push_back(std::move(pa));
    }
    if (depth > 0) return err(end_of(L), fmt::format("expected ')' to close the parameter list of {}", what));
    return true;
  }

  // An analysis card cannot be part of a subcircuit: the .ends must be missing. Reports that at the .subckt
  // and closes it, so the card is read at the top level.
  void close_unterminated_subckt(const LLine& L, const Token& card) {
    while (cur_sub_ >= 0) {
      const SubcktDef& s = out_.subckts[cur_sub_];
      err(s.loc, fmt::format("missing .ends for .subckt '{}' (reached {} at line {}, which is not allowed inside a "
                             "subcircuit)",
                             s.name, tok_text(L, card), at(L, card).line));
      close_subckt();
    }
  }

  // Closes the innermost open .subckt (dropping it if it was a duplicate read into scratch).
  void close_subckt() {
    if (scratch_sub_ == cur_sub_) {
      out_.subckts.resize(static_cast<size_t>(scratch_sub_));
      scratch_sub_ = -1;
    }
    open_subs_.pop_back();
    open_short_.pop_back();
    cur_sub_ = open_subs_.empty() ? -1 : open_subs_.back();
    sub_devices_.clear();
    sub_models_.clear();
    if (cur_sub_ < 0) return;
    const SubcktDef& p = out_.subckts[cur_sub_];  // back in the parent: its names again
    for (size_t k = 0; k < p.devices.size(); ++k) sub_devices_.try_emplace(p.devices[k].name, k, names_of(p.devices));
    for (size_t k = 0; k < p.models.size(); ++k) sub_models_.try_emplace(p.models[k].name, k, names_of(p.models));
  }

  void dot_card(const LLine& L, const Tokens& t, std::string_view card) {
    SourceLoc cloc = at(L, t[0]);
    if (card == ".model") return model(L, t);
    if (card == ".subckt") return subckt(L, t);
    if (card == ".ends") return ends(L, t);
    if (card == ".param") {
      if (!ifs_.empty())
        warn(cloc, ".param inside .if: anasim defines it only in the branch taken; ngspice 39 defines it whatever "
                   "the condition (the last definition wins)");
      auto& dst = cur_sub_ >= 0 ? out_.subckts[cur_sub_].params : out_.params;
      named_list(L, t, 1, dst, ".param");
      return;
    }
    if (card == ".op" || card == ".dc" || card == ".tran" || card == ".ac") {
      close_unterminated_subckt(L, t[0]);
      if (card == ".op") {
        if (t.size() > 1) {
          err(at(L, t[1]), fmt::format(".op takes no arguments, got '{}'", tok_text(L, t[1])));
          return;
        }
        AnalysisSpec a;
        a.kind = AnalysisSpec::Kind::Op;
        a.loc = cloc;
        out_.analyses.push_back(std::move(a));
        return;
      }
      if (card == ".dc") return dc(L, t);
      if (card == ".tran") return tran(L, t);
      return ac(L, t);
    }
    if (card == ".options" || card == ".option" || card == ".opt") {
      size_t i = 1;
      while (i < t.size()) {
        if (t[i].kind == Tk::Comma) {
          ++i;
          continue;
        }
        if (is_named(t, i)) {
          ParamAssign pa;
          if (!read_named(L, t, i, pa)) return;
          out_.options.push_back(std::move(pa));
          continue;
        }
        if (!is_word(t, i)) {
          err(at(L, t[i]), fmt::format("expected name=value or a flag name in {}, got '{}'", card, tok_text(L, t[i])));
          return;
        }
        ParamAssign pa;
        pa.name = tok_text(L, t[i]);
        pa.loc = at(L, t[i]);
        pa.values.push_back(ValueExpr{"1", pa.loc});
        out_.options.push_back(std::move(pa));
        ++i;
      }
      return;
    }
    if (card == ".ic") return ic(L, t);
    if (card == ".temp") {  // .temp <celsius>: the circuit temperature, as `.options temp=`
      size_t i = 1;
      ParamAssign pa;
      pa.name = "temp";
      pa.loc = cloc;
      if (!read_value(L, t, i, pa.values.emplace_back(), "a temperature in degrees C after .temp")) return;
      if (i < t.size())
        return void(err(at(L, t[i]), "anasim runs one temperature per deck: .temp takes one value (use .dc temp "
                                     "... for a sweep)"));
      out_.options.push_back(std::move(pa));
      return;
    }
    if (card == ".save" || card == ".probe") return save(L, t, card);
    if (card == ".meas" || card == ".measure") return measure(L, t);
    if (card == ".func") return func(L, t);
    if (card == ".global") {
      for (size_t i = 1; i < t.size(); ++i) {
        if (t[i].kind == Tk::Comma) continue;
        if (!is_word(t, i) || t[i].grouped)
          return void(err(at(L, t[i]), fmt::format("expected node names after .global, got '{}'", tok_text(L, t[i]))));
        const std::string n(tok_text(L, t[i]));
        if (!is_ground_name(n) && std::find(out_.globals.begin(), out_.globals.end(), n) == out_.globals.end())
          out_.globals.push_back(n);
      }
      return;
    }
    if (card == ".csparam") {  // variables of .control scripts, which anasim does not have
      std::vector<ParamAssign> ignored;
      if (named_list(L, t, 1, ignored, ".csparam"))
        warn(cloc, ".csparam only defines variables of .control scripts (let, if, ...), which anasim does not "
                   "have: no effect");
      return;
    }
    if (card == ".print" || card == ".plot" || card == ".width") {
      warn(cloc, fmt::format("{} only formats printed output, which anasim does not write: no effect", card));
      return;
    }
    if (card == ".endc") return;
    if (card == ".four" || card == ".nodeset") {
      warn(cloc, fmt::format("{} is not supported and was ignored", card));
      return;
    }
    err(cloc, fmt::format("unknown or unsupported dot card '{}' (supported: .model .subckt .ends .param .func "
                          ".include .lib .if .global .save .meas .op .dc .tran .ac .options .ic .end)",
                          card));
  }

  void model(const LLine& L, const Tokens& t) {
    if (!is_word(t, 1) || is_named(t, 1) || !is_word(t, 2) || is_named(t, 2)) {
      size_t bad = !is_word(t, 1) || is_named(t, 1) ? 1 : 2;
      err(at_or_end(L, t, bad), fmt::format("expected: .model <name> <type> (param=value ...), got {}",
                                            describe(L, t, bad)));
      return;
    }
    ModelDef m;
    m.name = tok_text(L, t[1]);
    m.type = tok_text(L, t[2]);
    m.loc = at(L, t[1]);
    if (!named_list(L, t, 3, m.params, ".model " + m.name, true)) return;
    std::vector<ModelDef>& models = cur_sub_ >= 0 ? out_.subckts[cur_sub_].models : out_.models;
    auto [first, added] = (cur_sub_ >= 0 ? sub_models_ : models_).try_emplace(m.name, models.size(), names_of(models));
    if (!added) {
      err(m.loc, fmt::format("duplicate .model '{}' ({})", m.name, first_defined(models[first].loc, m.loc)));
      return;
    }
    models.push_back(std::move(m));
  }

  void subckt(const LLine& L, const Tokens& t) {
    if (!is_word(t, 1) || is_named(t, 1)) {
      err(at_or_end(L, t, 1), "expected: .subckt <name> <ports...> [params: name=value ...]");
      return;
    }
    SubcktDef s;
    const std::string short_name(tok_text(L, t[1]));
    s.name = cur_sub_ >= 0 ? out_.subckts[cur_sub_].name + "/" + short_name : short_name;
    s.loc = at(L, t[1]);
    size_t i = 2;
    std::unordered_set<std::string_view> ports;  // views into L.text
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (is_named(t, i) || (is_word(t, i) && tok_text(L, t[i]) == "params:")) break;
      if (!is_word(t, i)) {
        err(at(L, t[i]), fmt::format("expected a port name in .subckt '{}', got '{}'", s.name, tok_text(L, t[i])));
        return;
      }
      std::string_view p = tok_text(L, t[i]);
      if (!ports.insert(p).second) {
        err(at(L, t[i]), fmt::format("duplicate port '{}' in .subckt '{}'", p, s.name));
        return;
      }
      s.ports.emplace_back(p);
      ++i;
    }
    if (is_word(t, i) && tok_text(L, t[i]) == "params:") ++i;
    if (!named_list(L, t, i, s.params, ".subckt " + s.name)) return;
    // Inside a duplicate (scratch) definition nothing is indexed: it is dropped at its .ends.
    size_t first = 0;
    bool added = true;
    if (scratch_sub_ < 0)
      std::tie(first, added) = subckts_.try_emplace(s.name, out_.subckts.size(), names_of(out_.subckts));
    if (!added) {
      err(s.loc, fmt::format("duplicate .subckt '{}' ({})", s.name, first_defined(out_.subckts[first].loc, s.loc)));
      // Parse the body anyway (into a scratch definition) so its lines do not leak into the top level.
    }
    nested_ = nested_ || cur_sub_ >= 0;
    out_.subckts.push_back(std::move(s));
    cur_sub_ = static_cast<int>(out_.subckts.size()) - 1;
    open_subs_.push_back(cur_sub_);
    open_short_.push_back(short_name);
    if (!added) scratch_sub_ = cur_sub_;
    sub_devices_.clear();
    sub_models_.clear();
  }

  void ends(const LLine& L, const Tokens& t) {
    if (cur_sub_ < 0) {
      err(at(L, t[0]), ".ends without a matching .subckt");
      return;
    }
    const SubcktDef& s = out_.subckts[cur_sub_];
    if (is_word(t, 1) && tok_text(L, t[1]) != open_short_.back()) {  // ngspice accepts it: it ends the innermost
      warn(at(L, t[1]), fmt::format(".ends '{}' does not match .subckt '{}' (line {}); taken as its end",
                                    tok_text(L, t[1]), open_short_.back(), s.loc.line));
    } else if (t.size() > 2) {
      err(at(L, t[2]), fmt::format("unexpected '{}' after .ends", tok_text(L, t[2])));
    }
    close_subckt();
  }

  void dc(const LLine& L, const Tokens& t) {
    AnalysisSpec a;
    a.kind = AnalysisSpec::Kind::Dc;
    a.loc = at(L, t[0]);
    const char* usage = "expected: .dc <source> <start> <stop> <step> [<source2> <start2> <stop2> <step2>]";
    size_t i = 1;
    while (i < t.size() && a.sweeps.size() < 2) {
      AnalysisSpec::Sweep s;
      if (!is_word(t, i) || is_named(t, i)) {
        err(at(L, t[i]), fmt::format("{}; got '{}'", usage, tok_text(L, t[i])));
        return;
      }
      s.source = tok_text(L, t[i]);
      s.loc = at(L, t[i]);
      ++i;
      ValueExpr* dst[3] = {&s.start, &s.stop, &s.step};
      const char* names[3] = {"start", "stop", "step"};
      for (int k = 0; k < 3; ++k) {
        while (i < t.size() && t[i].kind == Tk::Comma) ++i;
        if (i >= t.size()) {
          err(end_of(L), fmt::format("{}; missing <{}> for source '{}'", usage, names[k], s.source));
          return;
        }
        if (!read_value(L, t, i, *dst[k], fmt::format("the sweep {} value", names[k]))) return;
      }
      a.sweeps.push_back(std::move(s));
      while (i < t.size() && t[i].kind == Tk::Comma) ++i;
    }
    if (a.sweeps.empty()) {
      err(end_of(L), usage);
      return;
    }
    if (i < t.size()) {
      err(at(L, t[i]), fmt::format("{}; unexpected '{}'", usage, tok_text(L, t[i])));
      return;
    }
    out_.analyses.push_back(std::move(a));
  }

  void tran(const LLine& L, const Tokens& t) {
    AnalysisSpec a;
    a.kind = AnalysisSpec::Kind::Tran;
    a.loc = at(L, t[0]);
    const char* usage = "expected: .tran <tstep> <tstop> [<tstart> [<tmax>]] [uic]";
    ValueExpr* dst[4] = {&a.tstep, &a.tstop, &a.tstart, &a.tmax};
    int n = 0;
    size_t i = 1;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (is_word(t, i) && tok_text(L, t[i]) == "uic") {
        a.uic = true;
        ++i;
        continue;
      }
      if (n >= 4 || !is_value_start(t, i)) {
        err(at(L, t[i]), fmt::format("{}; unexpected '{}'", usage, tok_text(L, t[i])));
        return;
      }
      if (!read_value(L, t, i, *dst[n], "a time value")) return;
      ++n;
    }
    if (n < 2) {
      err(end_of(L), fmt::format("{}; missing <{}>", usage, n == 0 ? "tstep" : "tstop"));
      return;
    }
    out_.analyses.push_back(std::move(a));
  }

  void ac(const LLine& L, const Tokens& t) {
    AnalysisSpec a;
    a.kind = AnalysisSpec::Kind::Ac;
    a.loc = at(L, t[0]);
    const char* usage = "expected: .ac dec|oct|lin <points> <fstart> <fstop>";
    if (!is_word(t, 1)) {
      err(at_or_end(L, t, 1), fmt::format("{}; got {}", usage, describe(L, t, 1)));
      return;
    }
    a.variation = tok_text(L, t[1]);
    if (a.variation != "dec" && a.variation != "oct" && a.variation != "lin") {
      err(at(L, t[1]), fmt::format("expected dec, oct or lin after .ac, got '{}'", a.variation));
      return;
    }
    size_t i = 2;
    ValueExpr* dst[3] = {&a.points, &a.fstart, &a.fstop};
    const char* names[3] = {"points", "fstart", "fstop"};
    for (int k = 0; k < 3; ++k) {
      while (i < t.size() && t[i].kind == Tk::Comma) ++i;
      if (i >= t.size()) {
        err(end_of(L), fmt::format("{}; missing <{}>", usage, names[k]));
        return;
      }
      if (!read_value(L, t, i, *dst[k], fmt::format("<{}>", names[k]))) return;
    }
    if (i < t.size()) {
      err(at(L, t[i]), fmt::format("{}; unexpected '{}'", usage, tok_text(L, t[i])));
      return;
    }
    out_.analyses.push_back(std::move(a));
  }

  // .ic v(node)=value ...
  void ic(const LLine& L, const Tokens& t) {
    size_t i = 1;
    if (t.size() == 1) {
      err(end_of(L), "expected: .ic v(<node>)=<value> ...");
      return;
    }
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      bool ok = is_word(t, i) && tok_text(L, t[i]) == "v" && i + 4 < t.size() && t[i + 1].kind == Tk::LParen &&
                t[i + 2].kind == Tk::Word && t[i + 3].kind == Tk::RParen && t[i + 4].kind == Tk::Eq;
      if (!ok) {
        err(at(L, t[i]), fmt::format("expected v(<node>)=<value> in .ic, got '{}'", tok_text(L, t[i])));
        return;
      }
      ParamAssign pa;
      pa.name = tok_text(L, t[i + 2]);
      pa.loc = at(L, t[i + 2]);
      i += 5;
      ValueExpr v;
      if (!read_value(L, t, i, v, fmt::format("a value after v({})=", pa.name))) return;
      pa.values.push_back(std::move(v));
      out_.ics.push_back(std::move(pa));
    }
  }

  // .include "file" (relative to the including file). b..e is the card word in L.text.
  void include(const LLine& L, size_t b, size_t e, int depth) {
    SourceLoc cloc = at(L, b);
    const std::string raw = L.raw();
    size_t p = e;
    while (p < raw.size() && is_space(raw[p])) ++p;
    if (p >= raw.size()) {
      err(end_of(L), "expected a file name after .include");
      return;
    }
    SourceLoc floc = at(L, p);
    std::string name;
    char q = raw[p];
    if (q == '"' || q == '\'') {
      size_t close = raw.find(q, p + 1);
      if (close == std::string::npos) {
        err(floc, fmt::format("unterminated quote {} in .include file name", q));
        return;
      }
      name = raw.substr(p + 1, close - p - 1);
      size_t rest = close + 1;
      while (rest < raw.size() && is_space(raw[rest])) ++rest;
      if (rest < raw.size()) {
        err(at(L, rest), "unexpected text after the .include file name");
        return;
      }
    } else {
      name = trim(raw.substr(p));
    }
    if (name.empty()) {
      err(floc, "expected a file name after .include");
      return;
    }
    if (depth + 1 > detail::kMaxIncludeDepth) {
      err(cloc, fmt::format(".include nested more than {} deep (recursive include of '{}'?)",
                            detail::kMaxIncludeDepth, name));
      return;
    }
    std::string path = detail::resolve_include(L.file->path(), name);
    if (is_yaml_path(path)) {
      if (cur_sub_ >= 0) {
        err(cloc, "a YAML file cannot be included inside .subckt");
        return;
      }
      Status s = detail::include_yaml(path, cat_, out_, depth + 1, floc);
      st_.merge(s);
      index_top_level();
      return;
    }
    std::string text, why;
    if (!detail::read_text_file(path, text, why)) {
      err(floc, fmt::format("cannot open include file '{}': {}", path, why));
      return;
    }
    parse_text(path, std::move(text), false, depth + 1);
  }

  // ---- deck structure: .lib sections, .if, .func, .global, .save, .meas -------------------------

  // The words of the raw line after offset e (quotes kept together, then removed), with their offsets.
  static std::vector<std::pair<std::string, size_t>> raw_words(const LLine& L, size_t e) {
    const std::string raw = L.raw();
    std::vector<std::pair<std::string, size_t>> words;
    size_t p = e;
    while (p < raw.size()) {
      while (p < raw.size() && is_space(raw[p])) ++p;
      if (p >= raw.size()) break;
      const size_t b = p;
      if (raw[p] == '"' || raw[p] == '\'') {
        const size_t close = raw.find(raw[p], p + 1);
        const size_t end = close == std::string::npos ? raw.size() : close;
        words.emplace_back(raw.substr(p + 1, end - p - 1), b);
        p = end + 1;
        continue;
      }
      while (p < raw.size() && !is_space(raw[p])) ++p;
      words.emplace_back(raw.substr(b, p - b), b);
    }
    return words;
  }

  // .lib FILE SECTION reads the lines of SECTION in FILE (between ".lib SECTION" and ".endl"); .lib SECTION
  // alone starts a section definition, skipped unless a .lib FILE SECTION of this file asked for it.
  void lib(const LLine& L, size_t b, size_t e, int depth) {
    const auto words = raw_words(L, e);
    if (words.size() == 1) {  // a section definition that is not asked for here
      lib_.skip = true;
      return;
    }
    if (words.size() != 2) {
      err(words.empty() ? end_of(L) : at(L, words[words.size() > 2 ? 2 : 0].second),
          "expected: .lib <file> <section> (or .lib <section> ... .endl in a library file)");
      return;
    }
    const SourceLoc floc = at(L, words[0].second);
    if (depth + 1 > detail::kMaxIncludeDepth) {
      err(at(L, b), fmt::format(".lib nested more than {} deep (recursive .lib of '{}'?)", detail::kMaxIncludeDepth,
                                words[0].first));
      return;
    }
    const std::string path = detail::resolve_include(L.file->path(), words[0].first);
    std::string text, why;
    if (!detail::read_text_file(path, text, why)) {
      err(floc, fmt::format("cannot open library file '{}': {}", path, why));
      return;
    }
    LibState saved = std::move(lib_);
    lib_ = LibState{};
    lib_.want = to_lower(words[1].first);
    parse_text(path, std::move(text), false, depth + 1);
    const bool found = lib_.found;
    lib_ = std::move(saved);
    if (!found)
      err(at(L, words[1].second), fmt::format("library '{}' has no section '{}' (expected a line '.lib {}' ... "
                                              "'.endl' in it)",
                                              path, to_lower(words[1].first), to_lower(words[1].first)));
  }

  // A .lib line of a library file read for section lib_.want (outside that section).
  void lib_section_start(const LLine& L, size_t e) {
    const auto words = raw_words(L, e);
    if (words.size() == 1 && to_lower(words[0].first) == lib_.want) {
      lib_.in_want = true;
      lib_.found = true;
    }
  }

  // The value of a .if / .elseif condition (text after offset e), from the top-level .param values so far.
  bool condition(const LLine& L, size_t e, std::string_view card, bool& out) {
    size_t p = e;
    while (p < L.text.size() && is_space(L.text[p])) ++p;
    if (p >= L.text.size()) return err(end_of(L), fmt::format("expected a condition after {}", card));
    std::string text = trim(L.text.substr(p));
    const SourceLoc loc = at(L, p);
    if (!expand_funcs(text, loc)) return false;
    for (; if_params_ < out_.params.size(); ++if_params_) {  // parameters defined since the last condition
      const ParamAssign& pa = out_.params[if_params_];
      double v;
      std::string vt = pa.values.size() == 1 ? pa.values[0].text : std::string();
      if (vt.empty() || !expand_funcs(vt, pa.loc)) continue;
      if (evaluate_expr(vt, pa.values[0].loc, if_scope_, v).ok()) if_scope_.set(pa.name, v);
    }
    double v = 0;
    Status st = evaluate_expr(text, loc, if_scope_, v);
    if (!st) {
      for (Diag& d : st.errors)
        d.message = fmt::format("{} (in the {} condition; it may use top-level .param values defined above it)",
                                d.message, card);
      st_.merge(st);
      return false;
    }
    out = v != 0;
    return true;
  }

  // .if / .elseif / .else / .endif: conditions evaluated while reading, branches not taken are skipped.
  void conditional(const LLine& L, std::string_view card, size_t e) {
    const SourceLoc cloc = at(L, 0);
    if (card == ".if") {
      IfFrame f;
      f.parent_active = ifs_.empty() || ifs_.back().active;
      f.loc = cloc;
      if (f.parent_active) {
        bool c = false;
        condition(L, e, card, c);
        f.active = f.taken = c;
      }
      ifs_.push_back(f);
      return;
    }
    if (ifs_.empty()) {
      err(cloc, fmt::format("{} without a matching .if", card));
      return;
    }
    IfFrame& f = ifs_.back();
    if (card == ".endif") {
      ifs_.pop_back();
      return;
    }
    if (f.seen_else) {
      err(cloc, fmt::format("{} after .else (the .if is at line {})", card, f.loc.line));
      return;
    }
    if (card == ".else") {
      f.seen_else = true;
      f.active = f.parent_active && !f.taken;
      f.taken = true;
      return;
    }
    f.active = false;  // .elseif
    if (f.parent_active && !f.taken) {
      bool c = false;
      condition(L, e, card, c);
      f.active = f.taken = c;
    }
  }

  static bool ident_start(char c) { return is_alpha(c) || c == '_'; }
  static bool ident_char(char c) { return is_alpha(c) || c == '_' || (c >= '0' && c <= '9'); }

  // Calls f(begin, end) for every identifier of text outside numbers (a number's suffix is no identifier).
  template <class F>
  static void for_identifiers(const std::string& text, F&& f) {
    size_t i = 0;
    while (i < text.size()) {
      const char c = text[i];
      if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9')) {
        while (i < text.size() && (ident_char(text[i]) || text[i] == '.' ||
                                   ((text[i] == '+' || text[i] == '-') && (text[i - 1] == 'e'))))
          ++i;
        continue;
      }
      if (!ident_start(c)) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      f(i, j);
      i = j;
    }
  }

  // Replaces calls of .func functions in text by their bodies (arguments substituted, parenthesised), until
  // none is left. False (with a located error) on a wrong argument count or a recursive definition.
  // scope: the subcircuit the expression is written in ("" at the top level).
  static constexpr std::size_t kMaxExpandedChars = 1 << 20;  // an expression after .func expansion [characters]
  bool expand_funcs(std::string& text, const SourceLoc& loc, const std::string& scope = std::string()) {
    if (funcs_.empty()) return true;
    for (int pass = 0; pass < 64; ++pass) {
      std::string out;
      bool changed = false, bad = false;
      size_t copied = 0;
      for_identifiers(text, [&](size_t b, size_t e) {
        if (bad || b < copied) return;
        const std::string fname = text.substr(b, e - b);
        const UserFunc* found = find_func(scope, fname);
        if (!found) return;
        size_t p = e;
        while (p < text.size() && is_space(text[p])) ++p;
        if (p >= text.size() || text[p] != '(') return;
        std::vector<std::string> args;  // split at top-level commas
        int depth = 0;
        size_t a = p + 1, q = p;
        for (; q < text.size(); ++q) {
          if (text[q] == '(') ++depth;
          else if (text[q] == ')' && --depth == 0) break;
          else if (text[q] == ',' && depth == 1) {
            args.push_back(trim(std::string_view(text).substr(a, q - a)));
            a = q + 1;
          }
        }
        if (q >= text.size()) return;  // unbalanced: the expression reader reports it
        const std::string last = trim(std::string_view(text).substr(a, q - a));
        if (!last.empty() || !args.empty()) args.push_back(last);
        const UserFunc& fn = *found;
        if (args.size() != fn.args.size()) {
          err(loc, fmt::format("function '{}' takes {} argument(s), got {} (defined by .func at {}:{})", fname,
                               fn.args.size(), args.size(), fn.loc.file(), fn.loc.line));
          bad = true;
          return;
        }
        std::string body;
        size_t bc = 0;
        for_identifiers(fn.body, [&](size_t x, size_t y) {
          const std::string id = fn.body.substr(x, y - x);
          for (size_t k = 0; k < fn.args.size(); ++k)
            if (id == fn.args[k]) {
              body.append(fn.body, bc, x - bc);
              body += "(" + args[k] + ")";
              bc = y;
              return;
            }
        });
        body.append(fn.body, bc, std::string::npos);
        out.append(text, copied, b - copied);
        out += "(" + body + ")";
        copied = q + 1;
        changed = true;
      });
      if (bad) return false;
      if (!changed) return true;
      out.append(text, copied, std::string::npos);
      text = std::move(out);
      // A body that calls its own function twice doubles the text on every pass (fuzz/fuzz_spice: 2^64 copies).
      if (text.size() > kMaxExpandedChars)
        return err(loc, fmt::format("function calls expand to more than {} characters (a recursive .func?)",
                                    kMaxExpandedChars));
    }
    return err(loc, "function calls nested more than 64 deep (a recursive .func?)");
  }

  // .func name(a, b, ...) = expr   (or {expr}): a function usable in every expression of the deck.
  void func(const LLine& L, const Tokens& t) {
    const char* usage = "expected: .func <name>(<arg>, ...) = <expression>";
    if (!is_word(t, 1) || t.size() < 3 || t[2].kind != Tk::LParen)
      return void(err(at_or_end(L, t, 1), usage));
    const std::string name(tok_text(L, t[1]));
    UserFunc fn;
    fn.loc = at(L, t[1]);
    size_t i = 3;
    while (i < t.size() && t[i].kind != Tk::RParen) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      if (!is_word(t, i) || !ident_start(tok_text(L, t[i])[0]))
        return void(err(at(L, t[i]), fmt::format("expected an argument name in .func {}, got '{}'", name,
                                                 tok_text(L, t[i]))));
      fn.args.emplace_back(tok_text(L, t[i++]));
    }
    if (i >= t.size()) return void(err(end_of(L), fmt::format("expected ')' after the arguments of .func {}", name)));
    ++i;
    if (i < t.size() && t[i].kind == Tk::Eq) ++i;
    if (i >= t.size()) return void(err(end_of(L), fmt::format("{}; missing the expression of '{}'", usage, name)));
    std::string body = trim(L.text.substr(t[i].off));
    if (body.size() >= 2 && ((body.front() == '{' && body.back() == '}') ||
                             (body.front() == '\'' && body.back() == '\'') || (body.front() == '"' && body.back() == '"')))
      body = trim(std::string_view(body).substr(1, body.size() - 2));
    fn.body = std::move(body);
    auto& defs = funcs_[cur_sub_ >= 0 ? out_.subckts[cur_sub_].name : std::string()];
    if (defs.count(name)) warn(fn.loc, fmt::format(".func '{}' redefined; the last definition is used", name));
    defs[name] = std::move(fn);
  }

  // The .func `name` an expression written in `scope` calls: its own scope's, else the enclosing ones'.
  const UserFunc* find_func(const std::string& scope, const std::string& name) const {
    for (std::string s = scope;;) {
      const auto defs = funcs_.find(s);
      if (defs != funcs_.end()) {
        const auto it = defs->second.find(name);
        if (it != defs->second.end()) return &it->second;
      }
      if (s.empty()) return nullptr;
      const size_t slash = s.rfind('/');
      s = slash == std::string::npos ? std::string() : s.substr(0, slash);
    }
  }

  // Reads a signal at token i: name(args) ("v(out)", "v(a,b)", "vdb(out)", "i(v1)") or a bare node name
  // (taken as v(name)). The text is lower-case without spaces.
  bool read_signal(const LLine& L, const Tokens& t, size_t& i, std::string& sig, SourceLoc& loc, const char* what) {
    if (!is_word(t, i) || (is_named(t, i) && tok_text(L, t[i])[0] != '@'))  // WHEN @d1[id]=... is a signal
      return err(at_or_end(L, t, i), fmt::format("expected {} (a signal such as v(out) or i(v1)), got {}", what,
                                                 describe(L, t, i)));
    loc = at(L, t[i]);
    sig.assign(tok_text(L, t[i]));
    ++i;
    if (sig[0] == '@') {  // @device[name], checked in finish() (check_device_refs)
      device_refs_.emplace_back(sig, loc);
      return true;
    }
    if (i >= t.size() || t[i].kind != Tk::LParen || t[i].space_before) {
      sig = "v(" + sig + ")";
      return true;
    }
    const size_t open = i;
    for (; i < t.size() && t[i].kind != Tk::RParen; ++i) sig += tok_text(L, t[i]);
    if (i >= t.size()) return err(at(L, t[open]), "unbalanced parenthesis: '(' is never closed");
    sig += ')';
    ++i;
    return true;
  }

  static bool is_signal_word(std::string_view w) {
    for (const char* p : {"v", "i", "vm", "vp", "vdb", "vr", "vi", "im", "ip", "idb", "ir", "ii"})
      if (w == p) return true;
    return false;
  }

  // WHEN <signal>=<value or signal> at token i.
  bool when_clause(const LLine& L, const Tokens& t, size_t& i, MeasureClause& c) {
    if (!read_signal(L, t, i, c.signal, c.signal_loc, "a signal after WHEN")) return false;
    if (i >= t.size() || t[i].kind != Tk::Eq)
      return err(at_or_end(L, t, i), fmt::format("expected '=' after WHEN {} (WHEN <signal>=<value>)", c.signal));
    ++i;
    if (is_word(t, i) && is_signal_word(tok_text(L, t[i])) && i + 1 < t.size() && t[i + 1].kind == Tk::LParen &&
        !t[i + 1].space_before) {
      SourceLoc l2;
      return read_signal(L, t, i, c.signal2, l2, "a signal");
    }
    return read_value(L, t, i, c.val, "a value or a signal after WHEN <signal>=");
  }

  // .meas[ure] [tran|ac|dc] <name> <function> ... (ngspice syntax; see MeasureSpec).
  void measure(const LLine& L, const Tokens& t) {
    using F = MeasureSpec::Func;
    const char* usage = "expected: .meas tran|ac|dc <name> TRIG|WHEN|FIND|DERIV|AVG|RMS|MIN|MAX|PP|INTEG ...";
    MeasureSpec m;
    size_t i = 1;
    if (!is_word(t, i)) return void(err(at_or_end(L, t, i), fmt::format("{}; got {}", usage, describe(L, t, i))));
    std::string_view w = tok_text(L, t[i]);
    if (w == "tran" || w == "ac" || w == "dc") {
      m.analysis = w;
      ++i;
    } else if (w == "op" || w == "noise" || w == "sp" || w == "tf" || w == "pz") {
      return void(err(at(L, t[i]), fmt::format(".meas on {} analyses is not supported (tran, ac and dc are)", w)));
    } else {
      m.analysis = "tran";  // ngspice's default
    }
    if (!is_word(t, i) || is_named(t, i))
      return void(err(at_or_end(L, t, i), fmt::format("{}; missing the result name", usage)));
    m.name = tok_text(L, t[i]);
    m.loc = at(L, t[i]);
    ++i;
    if (is_named(t, i) && (tok_text(L, t[i]) == "param" || tok_text(L, t[i]) == "expr")) {
      m.func = F::Param;  // an expression of parameters and other results, evaluated after them as in ngspice
      const std::string key(tok_text(L, t[i]));
      i += 2;
      if (!read_value(L, t, i, m.main.val, [&] { return fmt::format("an expression after '{}='", key); })) return;
      if (i < t.size())
        return void(err(at(L, t[i]), fmt::format("unexpected '{}' after .meas {} {}=<expression>", tok_text(L, t[i]),
                                                 m.name, key)));
      out_.measures.push_back(std::move(m));
      return;
    }
    if (!is_word(t, i) || is_named(t, i))
      return void(err(at_or_end(L, t, i), fmt::format("{}; missing the function of '{}'", usage, m.name)));
    const std::string fname(tok_text(L, t[i]));
    static const std::pair<const char*, F> kFuncs[] = {
        {"trig", F::TrigTarg}, {"delay", F::TrigTarg}, {"when", F::When},    {"find", F::Find},
        {"deriv", F::Deriv},   {"derivative", F::Deriv}, {"avg", F::Avg},    {"rms", F::Rms},
        {"min", F::Min},       {"max", F::Max},        {"min_at", F::MinAt}, {"max_at", F::MaxAt},
        {"pp", F::Pp},         {"integ", F::Integ},    {"integral", F::Integ}};
    bool known = false;
    for (const auto& [n, f] : kFuncs)
      if (fname == n) {
        m.func = f;
        known = true;
      }
    if (!known)
      return void(err(at(L, t[i]), fmt::format("unknown .meas function '{}' (expected TRIG, WHEN, FIND, DERIV, AVG, "
                                               "RMS, MIN, MAX, MIN_AT, MAX_AT, PP or INTEG)", fname)));
    ++i;
    MeasureClause* c = &m.main;
    if (m.func == F::When) {
      if (!when_clause(L, t, i, m.main)) return;
    } else if (!(m.func == F::TrigTarg && is_named(t, i) && tok_text(L, t[i]) == "at")) {
      if (!read_signal(L, t, i, m.main.signal, m.main.signal_loc, "the signal to measure")) return;
    }
    bool targ = false;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      const std::string_view k = is_word(t, i) ? tok_text(L, t[i]) : std::string_view();
      if (!is_named(t, i) && k == "targ" && m.func == F::TrigTarg && !targ) {
        targ = true;
        c = &m.second;
        ++i;
        if (!(is_named(t, i) && tok_text(L, t[i]) == "at"))
          if (!read_signal(L, t, i, c->signal, c->signal_loc, "a signal after TARG")) return;
        continue;
      }
      if (!is_named(t, i) && k == "when" && (m.func == F::Find || m.func == F::Deriv) && c == &m.main) {
        c = &m.second;
        ++i;
        if (!when_clause(L, t, i, *c)) return;
        continue;
      }
      if (!is_named(t, i) && k == "last") {
        c->cross = ValueExpr{"last", at(L, t[i])};
        ++i;
        continue;
      }
      ValueExpr* dst = nullptr;
      if (is_named(t, i)) {
        if (k == "val") dst = &c->val;
        else if (k == "td") dst = &c->td;
        else if (k == "from") dst = &c->from;
        else if (k == "to") dst = &c->to;
        else if (k == "at") dst = &c->at;
        else if (k == "rise") dst = &c->rise;
        else if (k == "fall") dst = &c->fall;
        else if (k == "cross") dst = &c->cross;
      }
      if (!dst)
        return void(err(at(L, t[i]), fmt::format("unexpected '{}' in .meas {}; expected VAL= TD= FROM= TO= AT= RISE= "
                                                 "FALL= CROSS={}{}",
                                                 tok_text(L, t[i]), m.name, m.func == F::TrigTarg ? ", TARG" : "",
                                                 m.func == F::Find || m.func == F::Deriv ? ", WHEN" : "")));
      if (dst == &c->rise || dst == &c->fall || dst == &c->cross) {  // one edge count per clause, as ngspice
        c->rise = c->fall = c->cross = ValueExpr{};
      }
      i += 2;
      if (!read_value(L, t, i, *dst, [&] { return fmt::format("a value after '{}='", k); })) return;
    }
    auto edge_given = [](const MeasureClause& x) {
      return !x.at.text.empty() || !x.rise.text.empty() || !x.fall.text.empty() || !x.cross.text.empty();
    };
    if (m.func == F::TrigTarg) {
      if (!targ) return void(err(end_of(L), fmt::format(".meas {}: TRIG needs a TARG clause", m.name)));
      if (!edge_given(m.main) || !edge_given(m.second))
        return void(err(m.loc, fmt::format(".meas {}: TRIG and TARG each need AT=, RISE=, FALL= or CROSS=", m.name)));
      if ((m.main.at.text.empty() && m.main.val.text.empty()) || (m.second.at.text.empty() && m.second.val.text.empty()))
        return void(err(m.loc, fmt::format(".meas {}: TRIG and TARG each need VAL= (or AT=)", m.name)));
    }
    if ((m.func == F::Find || m.func == F::Deriv) && m.main.at.text.empty() && m.second.signal.empty())
      return void(err(end_of(L), fmt::format(".meas {}: {} needs AT=<value> or WHEN <signal>=<value>", m.name,
                                             m.func == F::Find ? "FIND" : "DERIV")));
    out_.measures.push_back(std::move(m));
  }

  // .save / .probe: the signals written (v(node), i(source), a bare node name; `all` = every signal).
  void save(const LLine& L, const Tokens& t, std::string_view card) {
    size_t i = 1;
    while (i < t.size()) {
      if (t[i].kind == Tk::Comma) {
        ++i;
        continue;
      }
      std::string_view w = is_word(t, i) ? tok_text(L, t[i]) : std::string_view();
      if (w == "all" || w == "alli" || w == "allv") {
        save_all_ = true;
        ++i;
        continue;
      }
      if (w == "tran" || w == "ac" || w == "dc" || w == "op") {
        ++i;  // an analysis name (HSPICE .probe tran v(x)): the list applies to every analysis
        continue;
      }
      std::string sig;
      SourceLoc loc;
      if (!read_signal(L, t, i, sig, loc, "a signal")) return;
      const bool v = sig.rfind("v(", 0) == 0, cur = sig.rfind("i(", 0) == 0;
      if (sig[0] == '@') {
        if (std::find(out_.outputs.begin(), out_.outputs.end(), sig) == out_.outputs.end())
          out_.outputs.push_back(std::move(sig));
        continue;
      }
      if ((!v && !cur) || sig.find(',') != std::string::npos)
        return void(err(loc, fmt::format("{} {}: only v(<node>), i(<source>) and node names can be saved", card, sig)));
      if (cur) saved_currents_.emplace_back(sig.substr(2, sig.size() - 3), loc);
      if (std::find(out_.outputs.begin(), out_.outputs.end(), sig) == out_.outputs.end())
        out_.outputs.push_back(std::move(sig));
    }
  }

  // A .save i(name) of a top-level device without a branch current (R, C, D, G, F, I: ngspice 39 drops such a
  // request without a word) is an error naming the device, at the request.
  void check_saved_currents() {
    for (const auto& [name, loc] : saved_currents_) {
      const size_t k = top_devices_.find(name, names_of(out_.devices));
      if (k == NameIndex::npos) continue;  // not a top-level device: the analysis says so, if nothing has it
      const std::string& type = out_.devices[k].type;
      if (type != "r" && type != "c" && type != "d" && type != "g" && type != "f" && type != "i") continue;
      const DeviceType* dt = cat_.find(type);
      DeviceQuery q;
      const bool ref = dt && device_query(*dt, "i", q);
      err(loc, fmt::format("i({}): {} '{}' has no branch current to save (voltage sources, inductors, E and H "
                           "sources and V= B sources have one); {}", name, dt ? dt->long_name : type, name,
                           ref ? fmt::format("save @{}[i] (ngspice's device current) instead", name)
                               : "put a 0 V source in series to measure it"));
    }
  }

  // Every @device[name] of .save and .meas names a top-level device and a quantity it has (device_query).
  void check_device_refs() {
    bool ac = false;
    for (const AnalysisSpec& a : out_.analyses) ac = ac || a.kind == AnalysisSpec::Kind::Ac;
    if (ac && !device_refs_.empty())
      warn(device_refs_[0].second, fmt::format("{}: device references are recorded in op, dc and tran, not in the "
                                               ".ac analysis", device_refs_[0].first));
    for (const auto& [ref, loc] : device_refs_) {
      std::string dev, what, known;
      if (!split_device_ref(ref, dev, what)) {
        err(loc, fmt::format("'{}' is not a device reference; expected @<device>[<parameter>], e.g. @r1[i]", ref));
        continue;
      }
      const size_t k = top_devices_.find(dev, names_of(out_.devices));
      const DeviceType* type = k == NameIndex::npos ? nullptr : cat_.find(out_.devices[k].type);
      DeviceQuery q;
      if (!type)
        err(loc, fmt::format("{}: no top-level device '{}' with parameters to read (devices inside a subcircuit "
                             "cannot be referenced)", ref, dev));
      else if (!device_query(*type, what, q, &known))
        err(loc, fmt::format("{}: {} '{}' has no parameter '{}' to read; it has {}", ref, type->long_name, dev, what,
                             known));
    }
  }

  // Nested .subckt definitions are stored as "<parent>/<name>": an instance inside a subcircuit names the
  // definition nested in it (or in an enclosing one) before a top-level one, as ngspice scopes them.
  void resolve_nested_subckts() {
    for (SubcktDef& s : out_.subckts)
      for (DeviceInstance& d : s.devices) {
        if (d.type != "x") continue;
        for (std::string scope = s.name;;) {
          const std::string cand = scope + "/" + d.model;
          if (subckts_.find(cand, names_of(out_.subckts)) != NameIndex::npos) {
            d.model = cand;
            break;
          }
          const size_t slash = scope.rfind('/');
          if (slash == std::string::npos) break;
          scope.resize(slash);
        }
      }
  }

  // Applies .func definitions to every expression of the deck.
  void expand_all_funcs() {
    if (funcs_.empty()) return;
    std::string scope;  // the subcircuit being expanded ("" at the top level)
    auto fix = [&](ValueExpr& v) {
      if (!v.text.empty()) expand_funcs(v.text, v.loc, scope);
    };
    auto fix_params = [&](std::vector<ParamAssign>& ps) {
      for (ParamAssign& p : ps)
        for (ValueExpr& v : p.values) fix(v);
    };
    auto fix_devices = [&](std::vector<DeviceInstance>& ds) {
      for (DeviceInstance& d : ds) fix_params(d.params);
    };
    fix_params(out_.params);
    fix_params(out_.options);
    fix_params(out_.ics);
    for (ModelDef& m : out_.models) fix_params(m.params);
    fix_devices(out_.devices);
    for (SubcktDef& s : out_.subckts) {
      scope = s.name;
      fix_params(s.params);
      for (ModelDef& m : s.models) fix_params(m.params);
      fix_devices(s.devices);
    }
    scope.clear();
    for (AnalysisSpec& a : out_.analyses) {
      for (AnalysisSpec::Sweep& sw : a.sweeps)
        for (ValueExpr* v : {&sw.start, &sw.stop, &sw.step}) fix(*v);
      for (ValueExpr* v : {&a.tstep, &a.tstop, &a.tstart, &a.tmax, &a.points, &a.fstart, &a.fstop}) fix(*v);
      fix_params(a.args);
    }
    for (MeasureSpec& m : out_.measures)
      for (MeasureClause* c : {&m.main, &m.second})
        for (ValueExpr* v : {&c->val, &c->td, &c->from, &c->to, &c->at}) fix(*v);
  }
};

Status run_spice(const std::string& text, const std::string& name, const DeviceCatalog& cat, ParsedNetlist& out) {
  out = ParsedNetlist{};
  out.file = name;
  SpiceParser p(cat, out);
  p.parse_text(name, text, true, 0);
  p.finish();
  return p.status();
}

}  // namespace

Status parse_spice_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                          ParsedNetlist& out) {
  return run_spice(text, pseudo_name, cat, out);
}

Status parse_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out) {
  std::string text, why;
  if (!detail::read_text_file(path, text, why)) {
    out = ParsedNetlist{};
    return Status::input(fmt::format("cannot open netlist '{}': {}", path, why));
  }
  return run_spice(text, path, cat, out);
}

namespace detail {

Status parse_measure(const std::string& text, const SourceLoc& at, const DeviceCatalog& cat, MeasureSpec& out) {
  ParsedNetlist tmp;
  Status st = parse_spice_string("measure\n.meas " + text + "\n", at.file() + " (measure)", cat, tmp);
  for (Diag& d : st.errors) d.loc = at;
  if (!st) return st;
  if (tmp.measures.size() != 1) return Status::input("expected one measurement in .meas syntax", at);
  out = std::move(tmp.measures[0]);
  out.loc = at;
  for (MeasureClause* c : {&out.main, &out.second}) {
    c->signal_loc = at;
    for (ValueExpr* v : {&c->val, &c->td, &c->from, &c->to, &c->at, &c->rise, &c->fall, &c->cross}) v->loc = at;
  }
  return st;
}

Status include_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out, int depth,
                     const SourceLoc& at) {
  if (depth > kMaxIncludeDepth)
    return Status::input(
        fmt::format("include nested more than {} deep (recursive include of '{}'?)", kMaxIncludeDepth, path), at);
  std::string text, why;
  if (!read_text_file(path, text, why))
    return Status::input(fmt::format("cannot open include file '{}': {}", path, why), at);
  SpiceParser p(cat, out);
  p.parse_text(path, std::move(text), false, depth);
  p.finish();
  return p.status();
}

}  // namespace detail
}  // namespace anasim
