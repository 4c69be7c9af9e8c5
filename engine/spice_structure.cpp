// SPICE reader: deck structure and outputs: .lib sections, .if/.elseif/.else/.endif, .func, .save/.probe,
// .meas, @device references, and the checks and expansions done once the whole deck is read.
#include "engine/spice_reader.hpp"

namespace anasim::spice {

std::vector<std::pair<std::string, size_t>> SpiceParser::raw_words(const LLine& L, size_t e) {
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

void SpiceParser::lib(const LLine& L, size_t b, size_t e, int depth) {
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

void SpiceParser::lib_section_start(const LLine& L, size_t e) {
  const auto words = raw_words(L, e);
  if (words.size() == 1 && to_lower(words[0].first) == lib_.want) {
    lib_.in_want = true;
    lib_.found = true;
  }
}

bool SpiceParser::condition(const LLine& L, size_t e, std::string_view card, bool& out) {
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

void SpiceParser::conditional(const LLine& L, std::string_view card, size_t e) {
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

bool SpiceParser::expand_funcs(std::string& text, const SourceLoc& loc, const std::string& scope) {
  if (funcs_.empty()) return true;
  // Work bound: the passes together read at most 4 kMaxExpandedChars characters (a recursive .func that keeps the
  // text near the size limit would otherwise cost 64 passes over a megabyte; fuzz/fuzz_spice, 10 s under ASan).
  std::size_t work = 0;
  for (int pass = 0; pass < 64; ++pass) {
    work += text.size();
    if (work > 4 * kMaxExpandedChars)
      return err(loc, fmt::format("function calls expand to more than {} characters (a recursive .func?)",
                                  4 * kMaxExpandedChars));
    std::string out;
    bool changed = false, bad = false, too_long = false, unbalanced = false;
    size_t copied = 0;
    for_identifiers(text, [&](size_t b, size_t e) {
      if (bad || b < copied) return;
      const std::string_view fname = std::string_view(text).substr(b, e - b);  // text is not changed in a pass
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
      if (q >= text.size()) {  // unbalanced: the expression reader reports it; stop here (every later call's
        unbalanced = true;     // scan to the end again made a pass quadratic: fuzz/fuzz_spice, 1 s for 241 bytes)
        bad = true;
        return;
      }
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
        if (body.size() > kMaxExpandedChars) return;  // too long already (reported below)
        const std::string_view id = std::string_view(fn.body).substr(x, y - x);
        for (size_t k = 0; k < fn.args.size(); ++k)
          if (id == fn.args[k]) {
            body.append(fn.body, bc, x - bc);
            body += '(';
            body += args[k];
            body += ')';
            bc = y;
            return;
          }
      });
      body.append(fn.body, bc, std::string::npos);
      // Checked per call, not only per pass: a body that names its argument many times multiplies the text
      // within one pass.
      if (out.size() + (b - copied) + body.size() + 2 > kMaxExpandedChars) {
        too_long = true;
        bad = true;
        return;
      }
      out.append(text, copied, b - copied);
      out += '(';
      out += body;
      out += ')';
      copied = q + 1;
      changed = true;
    });
    if (too_long)
      return err(loc, fmt::format("function calls expand to more than {} characters (a recursive .func?)",
                                  kMaxExpandedChars));
    if (unbalanced) return true;  // text left as it is
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

void SpiceParser::func(const LLine& L, const Tokens& t) {
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

const SpiceParser::UserFunc* SpiceParser::find_func(std::string_view scope, std::string_view name) const {
  for (std::string_view s = scope;;) {
    const auto defs = funcs_.find(s);
    if (defs != funcs_.end()) {
      const auto it = defs->second.find(name);
      if (it != defs->second.end()) return &it->second;
    }
    if (s.empty()) return nullptr;
    const size_t slash = s.rfind('/');
    s = slash == std::string_view::npos ? std::string_view() : s.substr(0, slash);
  }
}

bool SpiceParser::read_signal(const LLine& L, const Tokens& t, size_t& i, std::string& sig, SourceLoc& loc,
                              const char* what) {
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

bool SpiceParser::is_signal_word(std::string_view w) {
  for (const char* p : {"v", "i", "vm", "vp", "vdb", "vr", "vi", "im", "ip", "idb", "ir", "ii"})
    if (w == p) return true;
  return false;
}

bool SpiceParser::when_clause(const LLine& L, const Tokens& t, size_t& i, MeasureClause& c) {
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

void SpiceParser::measure(const LLine& L, const Tokens& t) {
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

void SpiceParser::save(const LLine& L, const Tokens& t, std::string_view card) {
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

void SpiceParser::check_saved_currents() {
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

void SpiceParser::check_device_refs() {
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

void SpiceParser::resolve_nested_subckts() {
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

void SpiceParser::expand_all_funcs() {
  if (funcs_.empty()) return;
  std::string scope;  // the subcircuit being expanded ("" at the top level)
  auto fix = [&](ValueExpr& v) {  // past the error limit, further errors are not reported: no need to expand
    if (!v.text.empty() && !too_many_errors()) expand_funcs(v.text, v.loc, scope);
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

}  // namespace anasim::spice
