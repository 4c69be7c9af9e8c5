// SPICE reader: the dot cards of the circuit and its analyses: .param lists, .model, .subckt/.ends, .op
// .dc .tran .ac, .options, .temp, .ic, .include and the cards accepted with a warning.
#include "engine/spice_reader.hpp"

namespace anasim::spice {

bool SpiceParser::named_list(const LLine& L, const Tokens& t, size_t i, std::vector<ParamAssign>& out,
                             const std::string& what, bool skip_parens) {
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

void SpiceParser::close_unterminated_subckt(const LLine& L, const Token& card) {
  while (cur_sub_ >= 0) {
    const SubcktDef& s = out_.subckts[cur_sub_];
    err(s.loc, fmt::format("missing .ends for .subckt '{}' (reached {} at line {}, which is not allowed inside a "
                           "subcircuit)",
                           s.name, tok_text(L, card), at(L, card).line));
    close_subckt();
  }
}

void SpiceParser::close_subckt() {
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

void SpiceParser::dot_card(const LLine& L, const Tokens& t, std::string_view card) {
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

void SpiceParser::model(const LLine& L, const Tokens& t) {
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

void SpiceParser::subckt(const LLine& L, const Tokens& t) {
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

void SpiceParser::ends(const LLine& L, const Tokens& t) {
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

void SpiceParser::dc(const LLine& L, const Tokens& t) {
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

void SpiceParser::tran(const LLine& L, const Tokens& t) {
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

void SpiceParser::ac(const LLine& L, const Tokens& t) {
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

void SpiceParser::ic(const LLine& L, const Tokens& t) {
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

void SpiceParser::include(const LLine& L, size_t b, size_t e, int depth) {
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

}  // namespace anasim::spice
