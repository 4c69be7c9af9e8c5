// SPICE deck reader: title line, comments, '+' continuations, device lines driven by the device catalog,
// and the dot cards anasim understands (.model .subckt .param .include .op .dc .tran .ac .options .ic .end).
// Every object keeps the location of its first character, even across continuation lines.
#include <cctype>
#include <deque>
#include <fmt/format.h>
#include <map>
#include "engine/parse.hpp"

namespace anasim {
namespace {

constexpr int kMaxErrors = 20;

// A source file kept alive for the duration of the parse (SourceLoc::text copies its lines).
struct SrcFile {
  SharedText path;
  std::vector<std::string> lines;  // original text, without line terminators
  std::vector<SharedText> shared;  // the same lines, shared by every SourceLoc pointing into them
};

// One logical line: physical lines joined at '+' continuations, comments removed. Every character
// remembers where it came from.
struct LLine {
  const SrcFile* file = nullptr;
  std::string raw;        // original case (file names in .include)
  std::string text;       // lower-case
  std::vector<int> line;  // per character: 1-based physical line
  std::vector<int> col;   // per character: 1-based column
  int end_line = 0;       // position just after the last character
  int end_col = 0;
};

enum class Tk { Word, Eq, LParen, RParen, Comma };

struct Token {
  Tk kind = Tk::Word;
  size_t off = 0, len = 0;    // into LLine::text
  bool space_before = false;  // whitespace (or line start) precedes the token
};

using Tokens = std::vector<Token>;

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
// Characters that end a word (not std::strchr: it would also match a NUL byte, giving an empty token).
bool is_separator(char c) { return c == '=' || c == '(' || c == ')' || c == ','; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Strips ';' and '$ ' inline comments (outside braces and quotes). Returns the kept prefix length.
size_t comment_start(const std::string& s) {
  int brace = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
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
  if (first.file == here.file) return fmt::format("first defined at line {}", first.line);
  return fmt::format("first defined at {}:{}", first.file, first.line);
}

const char* const kSourceKeywords[] = {"dc", "ac", "pulse", "sin", "exp", "pwl"};

bool is_source_keyword(const std::string& w) {
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
    {"pulse", 2, 7, "v1 v2 [td tr tf pw per]"},
    {"sin", 2, 6, "vo va [freq td theta phase]"},
    {"exp", 2, 6, "v1 v2 [td1 tau1 td2 tau2]"},
    {"pwl", 2, 100000000, "t1 v1 t2 v2 ..."},
};

class SpiceParser {
 public:
  SpiceParser(const DeviceCatalog& cat, ParsedNetlist& out) : cat_(cat), out_(out) {
    for (const DeviceInstance& d : out_.devices) top_devices_.emplace(d.name, d.loc);
    for (const ModelDef& m : out_.models) models_.emplace(m.name, m.loc);
    for (const SubcktDef& s : out_.subckts) subckts_.emplace(s.name, s.loc);
  }

  // Parses the lines of one file. `has_title`: the first line is the deck title (top-level file only).
  void parse_text(const std::string& path, const std::string& text, bool has_title, int depth) {
    files_.push_back(SrcFile{path, detail::split_lines(text)});
    const SrcFile& f = files_.back();
    size_t first = 0;
    if (has_title) {
      if (!f.lines.empty()) out_.title = trim(f.lines[0]);
      first = 1;
    }
    std::vector<LLine> lines = join_lines(f, first);
    for (const LLine& L : lines) {
      if (too_many_errors()) return;
      if (!process(L, depth)) return;  // .end
    }
  }

  // Checks done once the whole deck is read.
  void finish() {
    if (cur_sub_ >= 0 && !too_many_errors()) {
      const SubcktDef& s = out_.subckts[cur_sub_];
      err(s.loc, fmt::format("missing .ends for .subckt '{}'", s.name));
    }
  }

  Status status() const { return st_; }

 private:
  const DeviceCatalog& cat_;
  ParsedNetlist& out_;
  Status st_;
  std::deque<SrcFile> files_;
  int cur_sub_ = -1;  // index into out_.subckts while inside .subckt
  int scratch_sub_ = -1;  // a duplicate .subckt being read but not kept; removed at its .ends
  bool in_control_ = false;
  std::map<std::string, SourceLoc> top_devices_, sub_devices_, models_, sub_models_, subckts_;

  bool too_many_errors() const { return static_cast<int>(st_.errors.size()) >= kMaxErrors; }

  bool err(const SourceLoc& loc, std::string msg) {
    if (static_cast<int>(st_.errors.size()) < kMaxErrors) st_.merge(Status::input(std::move(msg), loc));
    if (static_cast<int>(st_.errors.size()) == kMaxErrors)
      st_.warnings.push_back(fmt::format("stopped after {} errors", kMaxErrors));
    return false;
  }
  void warn(const SourceLoc& loc, const std::string& msg) {
    st_.warnings.push_back(fmt::format("{}:{}: {}", loc.file, loc.line, msg));
  }

  // ---- locations ------------------------------------------------------------------------------

  static SourceLoc phys_loc(const SrcFile& f, int line, int col) {
    SourceLoc l;
    l.file = f.path;
    l.line = line;
    l.col = col;
    if (line >= 1 && line <= static_cast<int>(f.lines.size())) {
      auto& sh = const_cast<SrcFile&>(f).shared;
      if (sh.empty()) sh.resize(f.lines.size());
      if (sh[line - 1].empty() && !f.lines[line - 1].empty()) sh[line - 1] = SharedText(f.lines[line - 1]);
      l.text = sh[line - 1];
    }
    return l;
  }
  static SourceLoc at(const LLine& L, size_t off) {
    if (off >= L.text.size()) return end_of(L);
    return phys_loc(*L.file, L.line[off], L.col[off]);
  }
  static SourceLoc at(const LLine& L, const Token& t) { return at(L, t.off); }
  static SourceLoc end_of(const LLine& L) { return phys_loc(*L.file, L.end_line, L.end_col); }
  // Location of token i, or the end of the line if there is no token i.
  static SourceLoc at_or_end(const LLine& L, const Tokens& t, size_t i) {
    return i < t.size() ? at(L, t[i]) : end_of(L);
  }

  static std::string tok_text(const LLine& L, const Token& t) { return L.text.substr(t.off, t.len); }
  static std::string tok_raw(const LLine& L, const Token& t) { return L.raw.substr(t.off, t.len); }
  static std::string describe(const LLine& L, const Tokens& t, size_t i) {
    return i < t.size() ? fmt::format("'{}'", tok_text(L, t[i])) : std::string("end of line");
  }

  // ---- physical -> logical lines ---------------------------------------------------------------

  std::vector<LLine> join_lines(const SrcFile& f, size_t first) {
    std::vector<LLine> out;
    for (size_t i = first; i < f.lines.size(); ++i) {
      const std::string& s = f.lines[i];
      int lineno = static_cast<int>(i) + 1;
      size_t b = 0;
      while (b < s.size() && is_space(s[b])) ++b;
      if (b == s.size() || s[b] == '*') continue;  // blank or comment line
      size_t e = comment_start(s);
      if (trim(s.substr(0, e)).empty()) continue;  // only an inline comment
      bool cont = s[b] == '+';
      if (cont) {
        if (out.empty()) {
          err(phys_loc(f, lineno, static_cast<int>(b) + 1), "continuation line '+' without a preceding line");
          continue;
        }
        ++b;
      } else {
        out.emplace_back();
        out.back().file = &f;
      }
      LLine& L = out.back();
      if (cont) {  // the '+' becomes a separator
        L.raw += ' ';
        L.line.push_back(lineno);
        L.col.push_back(static_cast<int>(b));
      }
      size_t last = b;  // one past the last non-space character kept
      for (size_t k = b; k < e && k < s.size(); ++k) {
        L.raw += s[k];
        L.line.push_back(lineno);
        L.col.push_back(static_cast<int>(k) + 1);
        if (!is_space(s[k])) last = k + 1;
      }
      if (last > b || !cont || L.end_line == 0) {
        L.end_line = lineno;
        L.end_col = static_cast<int>(last) + 1;
      }
    }
    for (LLine& L : out) L.text = to_lower(L.raw);
    return out;
  }

  // ---- tokens ----------------------------------------------------------------------------------

  // Splits a logical line into words, '=', '(', ')' and ','. {..} groups and quoted strings stay inside
  // one word even when they contain spaces.
  bool tokenize(const LLine& L, Tokens& toks) {
    const std::string& s = L.text;
    size_t i = 0, n = s.size();
    bool space = true;
    while (i < n) {
      char c = s[i];
      if (is_space(c)) {
        space = true;
        ++i;
        continue;
      }
      Token t;
      t.off = i;
      t.space_before = space;
      space = false;
      t.len = 1;
      if (c == '=') {
        t.kind = Tk::Eq;
      } else if (c == '(') {
        t.kind = Tk::LParen;
      } else if (c == ')') {
        t.kind = Tk::RParen;
      } else if (c == ',') {
        t.kind = Tk::Comma;
      } else {
        size_t j = i;
        while (j < n && !is_space(s[j]) && !is_separator(s[j])) {
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
            if (k == std::string::npos) return err(at(L, j), fmt::format("unterminated quote {}", s[j]));
            j = k + 1;
          } else if (s[j] == '}') {
            return err(at(L, j), "unbalanced '}': no matching '{'");
          } else {
            ++j;
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
  bool read_value(const LLine& L, const Tokens& t, size_t& i, ValueExpr& v, const std::string& what) {
    if (i >= t.size()) return err(end_of(L), fmt::format("expected {}, got end of line", what));
    if (t[i].kind != Tk::Word && t[i].kind != Tk::LParen)
      return err(at(L, t[i]), fmt::format("expected {}, got '{}'", what, tok_text(L, t[i])));
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
    v.text = L.text.substr(t[start].off, last.off + last.len - t[start].off);
    v.loc = at(L, t[start]);
    return true;
  }

  // name = value at token i (is_named(t, i) must hold).
  bool read_named(const LLine& L, const Tokens& t, size_t& i, ParamAssign& pa) {
    pa.name = tok_text(L, t[i]);
    pa.loc = at(L, t[i]);
    i += 2;
    ValueExpr v;
    if (!read_value(L, t, i, v, fmt::format("a value after '{}='", pa.name))) return false;
    pa.values.push_back(std::move(v));
    return true;
  }

  // ---- dispatch --------------------------------------------------------------------------------

  // Returns false to stop reading this file (.end).
  bool process(const LLine& L, int depth) {
    // The card name decides whether the rest of the line is tokenized (.include takes a raw file name).
    size_t b = 0;
    while (b < L.text.size() && is_space(L.text[b])) ++b;
    size_t e = b;
    while (e < L.text.size() && !is_space(L.text[e])) ++e;
    std::string first = L.text.substr(b, e - b);
    if (in_control_) {
      if (first == ".endc") in_control_ = false;
      return true;
    }
    if (first.empty()) return true;
    size_t nul = L.text.find('\0');
    if (nul != std::string::npos) {
      err(at(L, nul), "unexpected NUL byte; is this a text netlist?");
      return true;
    }
    if (first[0] == '.') {
      // Cards that end in parentheses ("d(") are split by the tokenizer; compare only the card word.
      std::string card = first.substr(0, first.find_first_of("=(),"));
      if (card == ".include" || card == ".inc") {
        include(L, b, e, depth);
        return true;
      }
      if (card == ".lib") {
        err(at(L, b), ".lib is not supported; use .include \"file\"");
        return true;
      }
      if (card == ".end") return false;
      if (card == ".control") {
        in_control_ = true;
        return true;
      }
      if (card == ".title") {
        out_.title = trim(L.raw.substr(e));
        return true;
      }
      Tokens t;
      if (!tokenize(L, t)) return true;
      dot_card(L, t, card);
      return true;
    }
    Tokens t;
    if (!tokenize(L, t)) return true;
    if (t.empty()) return true;
    device(L, t);
    return true;
  }

  std::vector<DeviceInstance>& cur_devices() {
    return cur_sub_ >= 0 ? out_.subckts[cur_sub_].devices : out_.devices;
  }
  std::map<std::string, SourceLoc>& cur_device_names() { return cur_sub_ >= 0 ? sub_devices_ : top_devices_; }

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
    DeviceInstance d;
    d.name = tok_text(L, t[0]);
    d.loc = at(L, t[0]);
    char c = d.name[0];
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      err(d.loc, fmt::format("expected a device name (starting with a device letter: {}) or a dot card, got '{}'",
                             known_keys(), d.name));
      return;
    }
    if (d.name.find_first_of("{}'\"") != std::string::npos) {
      err(d.loc, fmt::format("invalid device name '{}'", d.name));
      return;
    }
    bool ok = false;
    if (c == 'x') {
      d.type = "x";
      ok = subckt_instance(L, t, d);
    } else {
      const DeviceType* type = cat_.find(std::string(1, c));
      if (!type) {
        err(d.loc, fmt::format("unknown device type '{}' (known: {})", c, known_keys()));
        return;
      }
      d.type = type->key;
      ok = typed_device(L, t, *type, d);
    }
    if (!ok) return;
    auto& names = cur_device_names();
    auto it = names.find(d.name);
    if (it != names.end()) {
      err(d.loc, fmt::format("duplicate device name '{}' ({})", d.name, first_defined(it->second, d.loc)));
      return;
    }
    names.emplace(d.name, d.loc);
    cur_devices().push_back(std::move(d));
  }

  bool node_token(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d) {
    std::string n = tok_text(L, t[i]);
    if (n.find_first_of("{}'\"") != std::string::npos)
      return err(at(L, t[i]), fmt::format("expected a node name, got '{}'", n));
    d.nodes.push_back(n);
    d.node_locs.push_back(at(L, t[i]));
    return true;
  }

  bool typed_device(const LLine& L, const Tokens& t, const DeviceType& type, DeviceInstance& d) {
    size_t i = 1;
    if (type.variadic_pins)
      return err(at(L, t[0]), fmt::format("{} '{}' has a parameter-dependent number of pins and is only available in "
                                          "YAML netlists", type.long_name, tok_text(L, t[0])));
    size_t want = type.pins.size();
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
    if (!type.model_type.empty()) {
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
        ParamAssign pa;
        if (!read_named(L, t, i, pa)) return false;
        d.params.push_back(std::move(pa));
        continue;
      }
      if (!is_value_start(t, i))
        return err(at(L, t[i]), fmt::format("unexpected '{}' in {} '{}'", tok_text(L, t[i]), type.long_name, d.name));
      // A bare word naming a flag parameter ("off") sets it.
      if (t[i].kind == Tk::Word && (i + 1 >= t.size() || t[i + 1].space_before || t[i + 1].kind != Tk::LParen)) {
        std::string w = tok_text(L, t[i]);
        bool flag = false;
        for (const ParamSpec& s : type.params)
          if (s.kind == ParamKind::Flag && w == s.name) flag = true;
        if (flag) {
          ParamAssign pa;
          pa.name = w;
          pa.loc = at(L, t[i]);
          pa.values.push_back(ValueExpr{"1", pa.loc});
          d.params.push_back(std::move(pa));
          ++i;
          continue;
        }
      }
      ParamAssign pa;
      SourceLoc vloc = at(L, t[i]);
      if (npos >= type.positional.size()) {
        if (type.positional.empty())
          return err(vloc, fmt::format("unexpected value '{}' for {} '{}'; expected name=value parameters",
                                       tok_text(L, t[i]), type.long_name, d.name));
        std::string names;
        for (const std::string& p : type.positional) names += (names.empty() ? "" : " ") + p;
        return err(vloc, fmt::format("too many values for {} '{}': expected at most {} ({}), then name=value",
                                     type.long_name, d.name, type.positional.size(), names));
      }
      ValueExpr v;
      if (!read_value(L, t, i, v, "a value")) return false;
      pa.name = type.positional[npos++];
      pa.loc = v.loc;
      pa.values.push_back(std::move(v));
      d.params.push_back(std::move(pa));
    }
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
        ParamAssign pa;
        if (!read_named(L, t, i, pa)) return false;
        if (pa.name == "dc") have_dc = true;
        d.params.push_back(std::move(pa));
        continue;
      }
      std::string w = is_word(t, i) ? tok_text(L, t[i]) : std::string();
      SourceLoc kloc = at(L, t[i]);
      if (w == "sffm" || w == "am" || w == "trnoise" || w == "trrandom")
        return err(kloc, fmt::format("source function '{}' is not supported (use DC, AC, PULSE, SIN, EXP or PWL)", w));
      if (keyword_at(i) && w == "dc") {
        ++i;
        ParamAssign pa{"dc", {}, false, kloc};
        ValueExpr v;
        if (!read_value(L, t, i, v, "a value after DC")) return false;
        pa.values.push_back(std::move(v));
        d.params.push_back(std::move(pa));
        have_dc = true;
        continue;
      }
      if (keyword_at(i) && w == "ac") {
        ++i;
        ParamAssign mag{"acmag", {}, false, kloc};
        if (is_value_start(t, i) && !keyword_at(i)) {
          ValueExpr v;
          if (!read_value(L, t, i, v, "the AC magnitude")) return false;
          mag.values.push_back(std::move(v));
          while (i < t.size() && t[i].kind == Tk::Comma) ++i;
          if (is_value_start(t, i) && !keyword_at(i)) {
            ParamAssign ph{"acphase", {}, false, at(L, t[i])};
            ValueExpr pv;
            if (!read_value(L, t, i, pv, "the AC phase")) return false;
            ph.values.push_back(std::move(pv));
            d.params.push_back(std::move(mag));
            d.params.push_back(std::move(ph));
            continue;
          }
        } else {
          mag.values.push_back(ValueExpr{"1", kloc});  // "AC" alone: magnitude 1
        }
        d.params.push_back(std::move(mag));
        continue;
      }
      if (keyword_at(i)) {  // pulse sin exp pwl
        ++i;
        ParamAssign pa{w, {}, true, kloc};
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
          ValueExpr v;
          if (!read_value(L, t, i, v, fmt::format("a value or ')' in {}(...)", to_upper(w)))) return false;
          pa.values.push_back(std::move(v));
        }
        for (const ListSpec& s : kListSpecs) {
          if (w != s.name) continue;
          size_t n = pa.values.size();
          if (n < s.min || n > s.max || (w == "pwl" && n % 2 != 0)) {
            std::string range = w == "pwl" ? "an even number of values" : fmt::format("{} to {} values", s.min, s.max);
            return err(kloc, fmt::format("{} takes {} ({}), got {}", to_upper(w), range, s.args, n));
          }
        }
        d.params.push_back(std::move(pa));
        continue;
      }
      if (!is_value_start(t, i))
        return err(kloc, fmt::format("unexpected '{}' in {} '{}'", tok_text(L, t[i]), type.long_name, d.name));
      if (have_dc)
        return err(kloc, fmt::format("unexpected value '{}' for {} '{}'; expected DC, AC, PULSE, SIN, EXP, PWL "
                                     "or name=value",
                                     tok_text(L, t[i]), type.long_name, d.name));
      ParamAssign pa{"dc", {}, false, kloc};
      ValueExpr v;
      if (!read_value(L, t, i, v, "a value")) return false;
      pa.values.push_back(std::move(v));
      d.params.push_back(std::move(pa));
      have_dc = true;
    }
    return true;
  }

  static std::string to_upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }

  // X1 n1 n2 ... subname [params:] [p=v ...]
  bool subckt_instance(const LLine& L, const Tokens& t, DeviceInstance& d) {
    size_t i = 1;
    std::vector<size_t> bare;
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
      ParamAssign pa;
      if (!read_named(L, t, i, pa)) return false;
      d.params.push_back(std::move(pa));
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
    if (cur_sub_ < 0) return;
    const SubcktDef& s = out_.subckts[cur_sub_];
    err(s.loc, fmt::format("missing .ends for .subckt '{}' (reached {} at line {}, which is not allowed inside a "
                           "subcircuit)",
                           s.name, tok_text(L, card), at(L, card).line));
    if (scratch_sub_ == cur_sub_) {
      out_.subckts.pop_back();
      scratch_sub_ = -1;
    }
    cur_sub_ = -1;
  }

  void dot_card(const LLine& L, const Tokens& t, const std::string& card) {
    SourceLoc cloc = at(L, t[0]);
    if (card == ".model") return model(L, t);
    if (card == ".subckt") return subckt(L, t);
    if (card == ".ends") return ends(L, t);
    if (card == ".param") {
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
    if (card == ".save" || card == ".print" || card == ".probe" || card == ".temp" || card == ".plot" ||
        card == ".width")
      return;
    if (card == ".endc") return;
    if (card == ".meas" || card == ".measure" || card == ".four" || card == ".nodeset") {
      warn(cloc, fmt::format("{} is not supported and was ignored", card));
      return;
    }
    err(cloc, fmt::format("unknown or unsupported dot card '{}' (supported: .model .subckt .ends .param .include "
                          ".op .dc .tran .ac .options .ic .end)",
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
    auto& names = cur_sub_ >= 0 ? sub_models_ : models_;
    auto it = names.find(m.name);
    if (it != names.end()) {
      err(m.loc, fmt::format("duplicate .model '{}' ({})", m.name, first_defined(it->second, m.loc)));
      return;
    }
    names.emplace(m.name, m.loc);
    if (cur_sub_ >= 0)
      out_.subckts[cur_sub_].models.push_back(std::move(m));
    else
      out_.models.push_back(std::move(m));
  }

  void subckt(const LLine& L, const Tokens& t) {
    if (cur_sub_ >= 0) {
      err(at(L, t[0]), fmt::format("nested .subckt definitions are not supported (inside .subckt '{}')",
                                   out_.subckts[cur_sub_].name));
      return;
    }
    if (!is_word(t, 1) || is_named(t, 1)) {
      err(at_or_end(L, t, 1), "expected: .subckt <name> <ports...> [params: name=value ...]");
      return;
    }
    SubcktDef s;
    s.name = tok_text(L, t[1]);
    s.loc = at(L, t[1]);
    size_t i = 2;
    std::map<std::string, SourceLoc> ports;
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
      std::string p = tok_text(L, t[i]);
      if (ports.count(p)) {
        err(at(L, t[i]), fmt::format("duplicate port '{}' in .subckt '{}'", p, s.name));
        return;
      }
      ports.emplace(p, at(L, t[i]));
      s.ports.push_back(p);
      ++i;
    }
    if (is_word(t, i) && tok_text(L, t[i]) == "params:") ++i;
    if (!named_list(L, t, i, s.params, ".subckt " + s.name)) return;
    auto it = subckts_.find(s.name);
    if (it != subckts_.end()) {
      err(s.loc, fmt::format("duplicate .subckt '{}' ({})", s.name, first_defined(it->second, s.loc)));
      // Parse the body anyway (into a scratch definition) so its lines do not leak into the top level.
    } else {
      subckts_.emplace(s.name, s.loc);
    }
    out_.subckts.push_back(std::move(s));
    cur_sub_ = static_cast<int>(out_.subckts.size()) - 1;
    if (it != subckts_.end()) scratch_sub_ = cur_sub_;
    sub_devices_.clear();
    sub_models_.clear();
  }

  void ends(const LLine& L, const Tokens& t) {
    if (cur_sub_ < 0) {
      err(at(L, t[0]), ".ends without a matching .subckt");
      return;
    }
    const SubcktDef& s = out_.subckts[cur_sub_];
    if (is_word(t, 1) && tok_text(L, t[1]) != s.name) {
      err(at(L, t[1]), fmt::format(".ends '{}' does not match .subckt '{}' (line {})", tok_text(L, t[1]), s.name,
                                   s.loc.line));
    } else if (t.size() > 2) {
      err(at(L, t[2]), fmt::format("unexpected '{}' after .ends", tok_text(L, t[2])));
    }
    if (scratch_sub_ == cur_sub_) {
      out_.subckts.pop_back();
      scratch_sub_ = -1;
    }
    cur_sub_ = -1;
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
    size_t p = e;
    while (p < L.raw.size() && is_space(L.raw[p])) ++p;
    if (p >= L.raw.size()) {
      err(end_of(L), "expected a file name after .include");
      return;
    }
    SourceLoc floc = at(L, p);
    std::string name;
    char q = L.raw[p];
    if (q == '"' || q == '\'') {
      size_t close = L.raw.find(q, p + 1);
      if (close == std::string::npos) {
        err(floc, fmt::format("unterminated quote {} in .include file name", q));
        return;
      }
      name = L.raw.substr(p + 1, close - p - 1);
      size_t rest = close + 1;
      while (rest < L.raw.size() && is_space(L.raw[rest])) ++rest;
      if (rest < L.raw.size()) {
        err(at(L, rest), "unexpected text after the .include file name");
        return;
      }
    } else {
      name = trim(L.raw.substr(p));
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
    std::string path = detail::resolve_include(L.file->path, name);
    if (is_yaml_path(path)) {
      if (cur_sub_ >= 0) {
        err(cloc, "a YAML file cannot be included inside .subckt");
        return;
      }
      Status s = detail::include_yaml(path, cat_, out_, depth + 1, floc);
      st_.merge(s);
      for (const DeviceInstance& d : out_.devices) top_devices_.emplace(d.name, d.loc);
      for (const ModelDef& m : out_.models) models_.emplace(m.name, m.loc);
      for (const SubcktDef& s2 : out_.subckts) subckts_.emplace(s2.name, s2.loc);
      return;
    }
    std::string text, why;
    if (!detail::read_text_file(path, text, why)) {
      err(floc, fmt::format("cannot open include file '{}': {}", path, why));
      return;
    }
    parse_text(path, text, false, depth + 1);
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

Status include_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out, int depth,
                     const SourceLoc& at) {
  if (depth > kMaxIncludeDepth)
    return Status::input(
        fmt::format("include nested more than {} deep (recursive include of '{}'?)", kMaxIncludeDepth, path), at);
  std::string text, why;
  if (!read_text_file(path, text, why))
    return Status::input(fmt::format("cannot open include file '{}': {}", path, why), at);
  SpiceParser p(cat, out);
  p.parse_text(path, text, false, depth);
  p.finish();
  return p.status();
}

}  // namespace detail
}  // namespace anasim
