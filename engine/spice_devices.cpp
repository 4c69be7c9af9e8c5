// SPICE reader: device lines (R C L V I E F G H D B X and every catalog type): nodes, values, models,
// source functions, behavioural E/G/F/H forms and subcircuit instances.
#include "engine/spice_reader.hpp"

namespace anasim::spice {

void SpiceParser::device(const LLine& L, const Tokens& t) {
  if (t[0].kind != Tk::Word) {
    err(at(L, t[0]), fmt::format("expected a device name or a dot card, got '{}'", tok_text(L, t[0])));
    return;
  }
  std::vector<DeviceInstance>& devices = cur_devices();
  // The duplicate check's probe (a cache miss in a table of 10^6 slots) loads while the fields are read.
  cur_device_names().prefetch(tok_text(L, t[0]));
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

bool SpiceParser::device_fields(const LLine& L, const Tokens& t, DeviceInstance& d) {
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

bool SpiceParser::behavioural_form(const LLine& L, const Tokens& t) {
  if (!is_word(t, 3)) return false;
  const std::string_view w = tok_text(L, t[3]);
  if (w == "poly") return t.size() > 4 && t[4].kind == Tk::LParen && !t[4].space_before;
  const char c = tok_text(L, t[0])[0];
  return is_named(t, 3) && (w == "value" || (w == "vol" && c == 'e') || (w == "cur" && c == 'g'));
}

bool SpiceParser::behavioural_controlled(const LLine& L, const Tokens& t, DeviceInstance& d) {
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

bool SpiceParser::node_token(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d) {
  std::string_view n = tok_text(L, t[i]);
  if (t[i].grouped) return err(at(L, t[i]), fmt::format("expected a node name, got '{}'", n));
  d.nodes.emplace_back(n);
  return true;
}

ParamAssign& SpiceParser::add_param(DeviceInstance& d, std::string_view name, bool is_list, const SourceLoc& loc) {
  ParamAssign& pa = d.params.emplace_back();
  pa.name = name;
  pa.is_list = is_list;
  pa.loc = loc;
  return pa;
}

bool SpiceParser::typed_device(const LLine& L, const Tokens& t, const DeviceType& type, DeviceInstance& d) {
  size_t i = 1;
  if (type.variadic_pins)
    return err(at(L, t[0]), fmt::format("{} '{}' has a parameter-dependent number of pins and is only available in "
                                        "YAML netlists", type.long_name, tok_text(L, t[0])));
  size_t want = type.pins.size();
  d.nodes.reserve(want);
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

bool SpiceParser::is_model_name(const LLine& L, const Tokens& t, size_t i) const {
  if (t[i].kind != Tk::Word || t[i].grouped) return false;
  if (i + 1 < t.size() && !t[i + 1].space_before && t[i + 1].kind != Tk::Comma) return false;
  std::string_view w = tok_text(L, t[i]);
  if (w.empty() || !is_alpha(w[0])) return false;
  for (char c : w)
    if (!is_alpha(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '$') return false;
  return true;
}

bool SpiceParser::is_expression_param(const DeviceType& type, std::string_view name) {
  for (const ParamSpec& s : type.params)
    if (s.kind == ParamKind::Expr && name == s.name) return true;
  return false;
}

bool SpiceParser::read_expression(const LLine& L, const Tokens& t, size_t i, DeviceInstance& d) {
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

bool SpiceParser::source_params(const LLine& L, const Tokens& t, size_t i, const DeviceType& type, DeviceInstance& d) {
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
      for (const WaveformArgs& s : kWaveformArgs) {
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

std::string SpiceParser::to_upper(std::string_view v) {
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool SpiceParser::subckt_instance(const LLine& L, const Tokens& t, DeviceInstance& d) {
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

}  // namespace anasim::spice
