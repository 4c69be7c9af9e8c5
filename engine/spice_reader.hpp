// SPICE reader: the parser's state and the declarations of its members, which are defined by topic in
// spice_parser.cpp (reading files, dispatch, .control), spice_lex.cpp (locations, tokens), spice_devices.cpp
// (device lines), spice_cards.cpp (.model, .subckt, analyses, .ic, .include) and spice_structure.cpp (.lib, .if,
// .func, .save, .meas and the checks at the end of the deck). Internal to the reader.
#pragma once
#include "engine/spice_lex.hpp"

namespace anasim::spice {

// Identifier characters of expressions by table, one load per character (SpiceParser::for_identifiers scans every
// expression once per .func expansion pass, up to megabytes): bit 1 may start an identifier (an ASCII letter or
// '_'), bit 2 may continue one (also a digit).
constexpr std::array<unsigned char, 256> make_ident_chars() {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    t[c] = static_cast<unsigned char>((start ? 1 : 0) | (start || (c >= '0' && c <= '9') ? 2 : 0));
  }
  return t;
}
inline constexpr std::array<unsigned char, 256> kIdentChars = make_ident_chars();

class SpiceParser {
 public:
  SpiceParser(const DeviceCatalog& cat, ParsedNetlist& out) : cat_(cat), out_(out) { index_top_level(); }

  // Parses the lines of one file. `has_title`: the first line is the deck title (top-level file only).
  void parse_text(const std::string& path, std::string text, bool has_title, int depth);

  // Checks done once the whole deck is read, then .func calls expanded and nested subcircuits resolved.
  void finish();

  Status status() const { return st_; }

 private:
  void reserve_devices(size_t n) {
    out_.devices.reserve(n);
    top_devices_.reserve(n);
  }

  // Reads lines [first, last) of f at include depth `depth`.
  void parse_lines(const SrcFile& f, size_t first, size_t last, int depth);

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
  // std::less<>: looked up by string_view (find_func runs once per identifier of every expression and pass).
  std::map<std::string, std::map<std::string, UserFunc, std::less<>>, std::less<>> funcs_;
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
  void index_top_level();

  const DeviceType* type_of_letter(char c);

  bool too_many_errors() const { return static_cast<int>(st_.errors.size()) >= kMaxErrors; }
  bool err(const SourceLoc& loc, std::string msg);
  void warn(const SourceLoc& loc, const std::string& msg) {
    if (t_diags_) return t_diags_->push_back(Diagnostic{t_line_, false, loc, msg});
    st_.warnings.push_back(fmt::format("{}:{}: {}", loc.file(), loc.line, msg));
  }

  // ---- queued device lines ----------------------------------------------------------------------
  // The top level's plain device lines (one physical line each, not a subcircuit instance) are queued and read in
  // batches by flush(), which any other line, and finish(), calls first: reading a batch's lines has no effect on
  // the parser's state but their errors and warnings, so it may run on two threads (a batch of at least
  // kTwoThreadItems lines), each line's messages kept aside with its place; then, in line order, the messages go
  // out and the names are checked for duplicates, exactly as device() does line by line. Measured against one
  // thread (2 cores, whole runs): the 784x128 crossbar deck 1.02x, 256x64 1.04x.
  static constexpr size_t kBatchLines = size_t(1) << 16;  // flushed at this many
  struct Queued {  // a queued line: its text in file->lower and its position
    const SrcFile* file;
    size_t off, len;
    int line, col, end_line, end_col;
  };
  struct Diagnostic {  // an error or warning of a queued line (its index in the batch)
    size_t line;
    bool error;
    SourceLoc loc;
    std::string msg;
  };
  std::vector<Queued> queued_;
  // Where err() and warn() put the messages of the thread reading a batch (nullptr: as usual), and its line.
  static thread_local std::vector<Diagnostic>* t_diags_;
  static thread_local size_t t_line_;
  // Whether L is queued rather than read at once (a device line at the top level; the caller has passed the deck
  // structure: .lib sections, .if branches, .control).
  bool queueable(const LLine& L) const;
  void flush();

  // ---- locations ------------------------------------------------------------------------------

  // The set_ forms fill an existing SourceLoc (an element already in place in the parsed netlist).
  static void set_phys_loc(SourceLoc& l, const SrcFile& f, int line, int col) { l = SourceLoc(f.src, line, col); }
  static SourceLoc phys_loc(const SrcFile& f, int line, int col);
  static void set_at(SourceLoc& l, const LLine& L, size_t off);
  static SourceLoc at(const LLine& L, size_t off);
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
  bool tokenize(const LLine& L, Tokens& toks);

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
  bool read_named(const LLine& L, const Tokens& t, size_t& i, ParamAssign& pa);

  // ---- dispatch --------------------------------------------------------------------------------

  // Returns false to stop reading this file (.end). `toks` is scratch space for the tokens.
  bool process(const LLine& L, int depth, Tokens& t);

  // One command of a .control block (ngspice's script language), the subset real decks use around their
  // analyses: op, dc, tran, ac (as the dot cards) and run; option(s) and save as .options and .save; meas as
  // .meas; quit/exit end the script. Commands that only print, plot or write results, and set/unset of control
  // variables, have no effect here and warn; anything else (let, if, foreach, alter, ...) is a located error.
  // `b` is where the command word `first` starts; the line is tokenized only for the commands read here (the
  // others may hold strings and $variables of the script language).
  void control_line(const LLine& L, size_t b, std::string_view first, Tokens& t);

  // The analyses as ngspice -b runs a deck with a .control block: the script's, with `run` standing for the dot
  // analyses, then the dot analyses once more unless the script quit. A deck without one keeps its dot analyses.
  void control_analyses();

  std::vector<DeviceInstance>& cur_devices() {
    return cur_sub_ >= 0 ? out_.subckts[cur_sub_].devices : out_.devices;
  }
  NameIndex& cur_device_names() { return cur_sub_ >= 0 ? sub_devices_ : top_devices_; }

  std::string known_keys() const;

  // ---- device lines ----------------------------------------------------------------------------

  void device(const LLine& L, const Tokens& t);

  bool device_fields(const LLine& L, const Tokens& t, DeviceInstance& d);

  // E/G/F/H written as PSpice and ngspice write behavioural sources: "POLY(n) ..." after the two nodes, or (E, G)
  // "VALUE=expr", "VOL=expr" (E), "CUR=expr" (G).
  static bool behavioural_form(const LLine& L, const Tokens& t);

  // A behavioural E/G/F/H as the B source it is: E and H give V=, G and F give I= (the current from the first node
  // through the source to the second, as G and F). VALUE= keeps its expression; POLY(n) controls coeffs becomes
  // the SPICE polynomial p0 + sum p_i x_i + sum_(i<=j) p_ij x_i x_j + ... (terms in that order, each order's index
  // tuples ascending; one coefficient alone is p0, as ngspice reads it), x the controlling voltages v(a,b) (E, G)
  // or source currents i(vname) (F, H).
  bool behavioural_controlled(const LLine& L, const Tokens& t, DeviceInstance& d);

  bool node_token(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d);

  // Appends an assignment with no values yet to d.params.
  static ParamAssign& add_param(DeviceInstance& d, std::string_view name, bool is_list, const SourceLoc& loc);

  bool typed_device(const LLine& L, const Tokens& t, const DeviceType& type, DeviceInstance& d);

  // Token i is a name standing alone (letters, digits, '_', '.', '$'; starting with a letter; not a number nor
  // the start of a longer value such as "rval*2").
  bool is_model_name(const LLine& L, const Tokens& t, size_t i) const;

  static bool is_expression_param(const DeviceType& type, std::string_view name);

  // name = expression (B source V= / I=): the expression is the rest of the line, spaces included, as in ngspice.
  bool read_expression(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d);

  // V / I: [DC] v | AC mag [phase] | PULSE(...) | SIN(...) | EXP(...) | PWL(...) | name=value, in any order.
  bool source_params(const LLine& L, const Tokens& t, size_t i, const DeviceType& type, DeviceInstance& d);

  static std::string to_upper(std::string_view v);

  // X1 n1 n2 ... subname [params:] [p=v ...]
  bool subckt_instance(const LLine& L, const Tokens& t, DeviceInstance& d);

  // ---- dot cards -------------------------------------------------------------------------------

  // Reads name=value pairs from token i to the end (commas allowed); `what` names the card.
  bool named_list(const LLine& L, const Tokens& t, size_t i, std::vector<ParamAssign>& out, const std::string& what,
                  bool skip_parens = false);

  // An analysis card cannot be part of a subcircuit: the .ends must be missing. Reports that at the .subckt
  // and closes it, so the card is read at the top level.
  void close_unterminated_subckt(const LLine& L, const Token& card);

  // Closes the innermost open .subckt (dropping it if it was a duplicate read into scratch).
  void close_subckt();

  void dot_card(const LLine& L, const Tokens& t, std::string_view card);

  void model(const LLine& L, const Tokens& t);

  void subckt(const LLine& L, const Tokens& t);

  void ends(const LLine& L, const Tokens& t);

  void dc(const LLine& L, const Tokens& t);

  void tran(const LLine& L, const Tokens& t);

  void ac(const LLine& L, const Tokens& t);

  // .ic v(node)=value ...
  void ic(const LLine& L, const Tokens& t);

  // .include "file" (relative to the including file). b..e is the card word in L.text.
  void include(const LLine& L, size_t b, size_t e, int depth);

  // ---- deck structure: .lib sections, .if, .func, .global, .save, .meas -------------------------

  // The words of the raw line after offset e (quotes kept together, then removed), with their offsets.
  static std::vector<std::pair<std::string, size_t>> raw_words(const LLine& L, size_t e);

  // .lib FILE SECTION reads the lines of SECTION in FILE (between ".lib SECTION" and ".endl"); .lib SECTION
  // alone starts a section definition, skipped unless a .lib FILE SECTION of this file asked for it.
  void lib(const LLine& L, size_t b, size_t e, int depth);

  // A .lib line of a library file read for section lib_.want (outside that section).
  void lib_section_start(const LLine& L, size_t e);

  // The value of a .if / .elseif condition (text after offset e), from the top-level .param values so far.
  bool condition(const LLine& L, size_t e, std::string_view card, bool& out);

  // .if / .elseif / .else / .endif: conditions evaluated while reading, branches not taken are skipped.
  void conditional(const LLine& L, std::string_view card, size_t e);

  static bool ident_start(char c) { return kIdentChars[static_cast<unsigned char>(c)] & 1; }
  static bool ident_char(char c) { return kIdentChars[static_cast<unsigned char>(c)] & 2; }

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
  bool expand_funcs(std::string& text, const SourceLoc& loc, const std::string& scope = std::string());

  // .func name(a, b, ...) = expr   (or {expr}): a function usable in every expression of the deck.
  void func(const LLine& L, const Tokens& t);

  // The .func `name` an expression written in `scope` calls: its own scope's, else the enclosing ones'.
  const UserFunc* find_func(std::string_view scope, std::string_view name) const;

  // Reads a signal at token i: name(args) ("v(out)", "v(a,b)", "vdb(out)", "i(v1)") or a bare node name
  // (taken as v(name)). The text is lower-case without spaces.
  bool read_signal(const LLine& L, const Tokens& t, size_t& i, std::string& sig, SourceLoc& loc, const char* what);

  static bool is_signal_word(std::string_view w);

  // WHEN <signal>=<value or signal> at token i.
  bool when_clause(const LLine& L, const Tokens& t, size_t& i, MeasureClause& c);

  // .meas[ure] [tran|ac|dc] <name> <function> ... (ngspice syntax; see MeasureSpec).
  void measure(const LLine& L, const Tokens& t);

  // .save / .probe: the signals written (v(node), i(source), a bare node name; `all` = every signal).
  void save(const LLine& L, const Tokens& t, std::string_view card);

  // A .save i(name) of a top-level device without a branch current (R, C, D, G, F, I: ngspice 39 drops such a
  // request without a word) is an error naming the device, at the request.
  void check_saved_currents();

  // Every @device[name] of .save and .meas names a top-level device and a quantity it has (device_query).
  void check_device_refs();

  // Nested .subckt definitions are stored as "<parent>/<name>": an instance inside a subcircuit names the
  // definition nested in it (or in an enclosing one) before a top-level one, as ngspice scopes them.
  void resolve_nested_subckts();

  // Applies .func definitions to every expression of the deck.
  void expand_all_funcs();
};

}  // namespace anasim::spice
