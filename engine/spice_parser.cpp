// SPICE deck reader: title line, comments, '+' continuations, device lines driven by the device catalog,
// and the dot cards anasim understands (.model .subckt .param .include .op .dc .tran .ac .options .ic .end).
// Every object keeps the location of its first character, even across continuation lines.
//
// Decks of 10^5..10^6 lines are common (flattened crossbars), so the reader keeps per-line work small: the file
// is lower-cased once and a logical line is a view into it (copied only when '+' lines are joined), tokens are
// views into the line, positions come from one segment per physical line, duplicate-name checks hash names to
// indices, and objects are built in place in the parsed netlist. Error messages are formatted only on errors.
// The top level's plain device lines are queued and read in batches, on two threads for large ones (flush()).
//
// The reader is split by topic (engine/spice_reader.hpp lists the files); this file reads files line by line,
// dispatches each logical line, runs .control scripts' commands and holds the entry points of engine/parse.hpp.
#include "engine/spice_reader.hpp"
#include "engine/two_threads.hpp"
#include <atomic>

namespace anasim {
namespace spice {

void SpiceParser::parse_text(const std::string& path, std::string text, bool has_title, int depth) {
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

void SpiceParser::finish() {
  flush();
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

void SpiceParser::parse_lines(const SrcFile& f, size_t first, size_t last, int depth) {
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

void SpiceParser::index_top_level() {
  for (size_t k = 0; k < out_.devices.size(); ++k)
    top_devices_.try_emplace(out_.devices[k].name, k, names_of(out_.devices));
  for (size_t k = 0; k < out_.models.size(); ++k) models_.try_emplace(out_.models[k].name, k, names_of(out_.models));
  for (size_t k = 0; k < out_.subckts.size(); ++k)
    subckts_.try_emplace(out_.subckts[k].name, k, names_of(out_.subckts));
}

const DeviceType* SpiceParser::type_of_letter(char c) {
  auto u = static_cast<unsigned char>(c);
  if (!type_looked_up_[u]) {
    type_of_letter_[u] = cat_.find(std::string(1, c));
    type_looked_up_[u] = true;
  }
  return type_of_letter_[u];
}

bool SpiceParser::err(const SourceLoc& loc, std::string msg) {
  if (t_diags_) {  // a queued line read by flush(): kept aside
    t_diags_->push_back(Diagnostic{t_line_, true, loc, std::move(msg)});
    return false;
  }
  if (static_cast<int>(st_.errors.size()) >= kMaxErrors) return false;  // said once, below
  st_.merge(Status::input(std::move(msg), loc));
  if (static_cast<int>(st_.errors.size()) == kMaxErrors)
    st_.warnings.push_back(fmt::format("stopped after {} errors", kMaxErrors));
  return false;
}

bool SpiceParser::process(const LLine& L, int depth, Tokens& t) {
  const bool queue = queueable(L);
  if (!queued_.empty() && !queue) {
    flush();
    if (too_many_errors()) return false;  // (parse_lines checks before each line; the queue's errors came later)
  }
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
  if (queue) {
    const SrcFile& f = *L.file;
    queued_.push_back(Queued{&f, static_cast<size_t>(L.text.data() - f.lower.data()), L.text.size(), L.segs[0].line,
                             L.segs[0].col, L.end_line, L.end_col});
    if (queued_.size() >= kBatchLines) flush();
    return true;
  }
  if (!tokenize(L, t)) return true;
  if (t.empty()) return true;
  device(L, t);
  return true;
}

thread_local std::vector<SpiceParser::Diagnostic>* SpiceParser::t_diags_ = nullptr;
thread_local size_t SpiceParser::t_line_ = 0;

bool SpiceParser::queueable(const LLine& L) const {
  if (in_control_ || cur_sub_ >= 0 || L.segs.size() != 1 || L.text.data() == L.joined.data() || L.file->has_nul)
    return false;
  size_t b = 0;
  while (b < L.text.size() && is_space(L.text[b])) ++b;
  return b < L.text.size() && is_alpha(L.text[b]) && L.text[b] != 'x';
}

void SpiceParser::flush() {
  if (queued_.empty()) return;
  const size_t m = queued_.size();
  std::vector<DeviceInstance>& devices = out_.devices;  // (queued at the top level only)
  const size_t base = devices.size();
  if (m >= kTwoThreadItems && devices.capacity() >= base + m)  // (the records constructed here, reserved)
    populate_pages(devices.data() + base, m * sizeof(DeviceInstance));
  devices.resize(base + m);
  for (int c = 'a'; c <= 'z'; ++c) type_of_letter(static_cast<char>(c));  // the cache filled before threads read it
  // Reading: each line into its place (ok[k]: a device), in blocks claimed by one or two threads.
  std::vector<char> ok(m, 0);
  std::atomic<size_t> next{0};
  constexpr size_t kBlock = 256;
  auto read = [&](std::vector<Diagnostic>& diags) {
    LLine L;
    L.segs.resize(1);
    Tokens t;
    struct Collect {  // this thread's messages into diags while it reads (also when it throws)
      explicit Collect(std::vector<Diagnostic>* d) { t_diags_ = d; }
      ~Collect() { t_diags_ = nullptr; }
    } collect(&diags);
    for (size_t k0; (k0 = next.fetch_add(kBlock)) < m;)
      for (size_t k = k0; k < std::min(m, k0 + kBlock); ++k) {
        const Queued& q = queued_[k];
        L.file = q.file;
        L.text = std::string_view(q.file->lower.data() + q.off, q.len);
        L.segs[0] = LLine::Seg{0, q.line, q.col};
        L.end_line = q.end_line;
        L.end_col = q.end_col;
        t_line_ = k;
        if (!tokenize(L, t) || t.empty()) continue;
        if (t[0].kind != Tk::Word) {
          err(at(L, t[0]), fmt::format("expected a device name or a dot card, got '{}'", tok_text(L, t[0])));
          continue;
        }
        ok[k] = device_fields(L, t, devices[base + k]);
      }
  };
  std::vector<Diagnostic> diags, diags2;
  if (m >= kTwoThreadItems && second_thread_allowed()) {
    run_beside([&] { read(diags2); }, [&] { read(diags); }, [&] { next.store(m); });
    diags.insert(diags.end(), std::make_move_iterator(diags2.begin()), std::make_move_iterator(diags2.end()));
    std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return a.line < b.line;
    });
  } else {
    read(diags);
  }
  // In line order, as device() line by line: the messages, then the duplicate check; a line not read (an error)
  // or a duplicate leaves no device. Nothing after the error limit (parse_lines stops there).
  size_t w = 0, d = 0;
  for (size_t k = 0; k < m && !too_many_errors(); ++k) {
    for (; d < diags.size() && diags[d].line == k; ++d) {
      if (diags[d].error) err(diags[d].loc, std::move(diags[d].msg));
      else warn(diags[d].loc, diags[d].msg);
    }
    if (!ok[k]) continue;
    if (k + 8 < m && ok[k + 8]) top_devices_.prefetch(devices[base + k + 8].name);
    if (w != k) devices[base + w] = std::move(devices[base + k]);
    DeviceInstance& dev = devices[base + w];
    auto [first, added] = top_devices_.try_emplace(dev.name, base + w, names_of(devices));
    if (!added) {
      err(dev.loc, fmt::format("duplicate device name '{}' ({})", dev.name, first_defined(devices[first].loc, dev.loc)));
      continue;
    }
    ++w;
  }
  devices.resize(base + w);
  queued_.clear();
}

void SpiceParser::control_line(const LLine& L, size_t b, std::string_view first, Tokens& t) {
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

void SpiceParser::control_analyses() {
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

std::string SpiceParser::known_keys() const {
  std::string s;
  for (const DeviceType* d : cat_.all()) s += d->key + " ";
  return s + "x";
}

}  // namespace spice

namespace {
using spice::SpiceParser;

Status run_spice(std::string text, const std::string& name, const DeviceCatalog& cat, ParsedNetlist& out) {
  out = ParsedNetlist{};
  out.file = name;
  SpiceParser p(cat, out);
  p.parse_text(name, std::move(text), true, 0);
  p.finish();
  return p.status();
}

}  // namespace

Status parse_spice_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                          ParsedNetlist& out) {
  return run_spice(text, pseudo_name, cat, out);
}

Status parse_spice_string(std::string&& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                          ParsedNetlist& out) {
  return run_spice(std::move(text), pseudo_name, cat, out);
}

Status parse_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out) {
  std::string text, why;
  if (!detail::read_text_file(path, text, why)) {
    out = ParsedNetlist{};
    return Status::input(fmt::format("cannot open netlist '{}': {}", path, why));
  }
  return run_spice(std::move(text), path, cat, out);
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
