// SPICE deck writer (see export_spice.hpp) and the default DeviceType::spice_line.
#include "engine/export_spice.hpp"
#include "engine/output_file.hpp"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <fmt/format.h>

namespace anasim {

std::string spice_instance_name(const std::string& key, const std::string& flat_name) {
  if (!flat_name.empty() && flat_name.find('.') == std::string::npos && flat_name[0] == key[0]) return flat_name;
  return key + "." + flat_name;
}

std::string DeviceType::spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const {
  std::string s = spice_instance_name(key, fd.name);
  for (const auto& n : pins) s += " " + n;
  if (needs_control) s += " " + spice_instance_name(fd.control_type ? fd.control_type->key : "v", fd.control);
  if (!model_type.empty()) s += " " + fd.model_name;
  std::vector<bool> done(params.size(), false);
  for (const auto& pos : positional) {
    int i = fd.params.index_of(pos);
    // Only required values (r, c, gain, ...) go positionally: ngspice 39 rejects e.g. a bare diode area.
    if (i < 0 || !std::isnan(params[i].def)) continue;
    s += fmt::format(" {:.15g}", fd.params[i]);
    done[i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (done[i] || !fd.params.has(static_cast<int>(i))) continue;
    if (params[i].kind == ParamKind::Flag) {
      if (fd.params[i] != 0) s += fmt::format(" {}", params[i].name);
    } else if (params[i].kind == ParamKind::Real) {
      s += fmt::format(" {}={:.15g}", params[i].name, fd.params[i]);
    }
  }
  return s;
}

Status check_spice_names(const FlatNetlist& fn) {
  // ngspice splits a card at white space, '=', '(', ')' and ',', takes ';' and '$' as comment starts and
  // quotes as string delimiters: a node named with any of them would be read as something else.
  auto bad = [](const std::string& n) {
    if (n.empty()) return true;
    for (unsigned char c : n)
      if (c <= ' ' || c >= 0x7f || std::strchr("=(),;$'\"{}", c)) return true;
    return false;
  };
  for (size_t k = 1; k < fn.node_names.size(); ++k)
    if (bad(fn.node_names[k]))
      return Status::input(fmt::format("cannot export to SPICE: node name '{}' holds a character ngspice cannot read "
                                       "in a node name (white space, control characters, = ( ) , ; $ quotes or braces); "
                                       "rename the node",
                                       fn.node_names[k]));
  return {};
}

std::string spice_deck(const FlatNetlist& fn) {
  std::string out = (fn.title.empty() ? std::string("anasim export") : fn.title) + "\n";
  out += fmt::format("* exported by anasim from {}\n", fn.file);
  // One .model per distinct (name, values); flattened subcircuit models may differ by parameters.
  std::map<std::string, std::string> model_text;  // model name -> card
  std::vector<FlatDevice> devs = fn.devices;
  std::map<std::string, int> suffix;
  for (auto& fd : devs) {
    if (fd.type->model_type.empty() || !fd.type->spice_model_card) continue;
    std::string body;
    for (size_t i = 0; i < fd.type->model_params.size(); ++i)
      if (fd.model.table && fd.model.has(static_cast<int>(i)))
        body += fmt::format(" {}={:.15g}", fd.type->model_params[i].name, fd.model[i]);
    std::string name = fd.model_name.empty() ? "default_" + fd.type->key : fd.model_name;
    for (char& c : name) if (c == '.') c = '_';
    std::string card = fmt::format(".model {} {}({})", name, fd.type->model_type, body);
    auto it = model_text.find(name);
    while (it != model_text.end() && it->second != card) {
      name = fmt::format("{}_{}", fd.model_name.empty() ? "m" : fd.model_name, ++suffix[name]);
      for (char& c : name) if (c == '.') c = '_';
      card = fmt::format(".model {} {}({})", name, fd.type->model_type, body);
      it = model_text.find(name);
    }
    model_text[name] = card;
    fd.model_name = name;
  }
  for (const auto& [n, card] : model_text) out += card + "\n";
  for (const auto& fd : devs) out += fd.type->spice_line(fd, fn.pin_names(fd)) + "\n";
  const Options& o = fn.options;
  out += fmt::format(".options reltol={:.15g} abstol={:.15g} vntol={:.15g} chgtol={:.15g} trtol={:.15g} gmin={:.15g} "
                     "itl1={} itl4={} method={} maxord={}\n",
                     o.reltol, o.abstol, o.vntol, o.chgtol, o.trtol, o.gmin, o.itl1, o.itl4,
                     o.method == Integration::Gear ? "gear" : "trap",
                     o.method == Integration::BackwardEuler ? 1 : o.maxord);
  if (!fn.ics.empty()) {
    out += ".ic";
    for (const auto& [node, v] : fn.ics) out += fmt::format(" v({})={:.15g}", fn.node_names[node.v], v);
    out += "\n";
  }
  for (const auto& a : fn.analyses) {
    switch (a.kind) {
      case AnalysisSpec::Kind::Op: out += ".op\n"; break;
      case AnalysisSpec::Kind::Dc:
        out += ".dc";
        for (const auto& s : a.sweeps) {
          std::string key = "v";
          for (const auto& fd : fn.devices) if (fd.name == s.source) key = fd.type->key;
          out += fmt::format(" {} {:.15g} {:.15g} {:.15g}", spice_instance_name(key, s.source), s.start, s.stop, s.step);
        }
        out += "\n";
        break;
      case AnalysisSpec::Kind::Tran:
        out += fmt::format(".tran {:.15g} {:.15g} {:.15g}", a.tstep, a.tstop, a.tstart);
        if (a.tmax > 0) out += fmt::format(" {:.15g}", a.tmax);
        if (a.uic) out += " uic";
        out += "\n";
        break;
      case AnalysisSpec::Kind::Ac:
        out += fmt::format(".ac {} {} {:.15g} {:.15g}\n", a.variation, a.points, a.fstart, a.fstop);
        break;
      case AnalysisSpec::Kind::Extension:
        out += fmt::format("* {} analysis: anasim only, not exported\n", a.type->name);
        break;
    }
  }
  out += ".end\n";
  return out;
}

Status export_spice(const FlatNetlist& fn, const std::string& path) {
  if (Status st = check_spice_names(fn); !st) return st;
  return write_output_file(path, spice_deck(fn));
}

}  // namespace anasim
