// ngspice's @device[name] references: parsing and meaning (see device_query.hpp).
#include "engine/device_query.hpp"
#include <fmt/format.h>

namespace anasim {

bool split_device_ref(std::string_view ref, std::string& device, std::string& param) {
  const size_t open = ref.find('[');
  if (ref.size() < 4 || ref[0] != '@' || open == std::string_view::npos || open < 2 || ref.back() != ']' ||
      open + 2 >= ref.size())
    return false;
  device.assign(ref.substr(1, open - 1));
  param.assign(ref.substr(open + 1, ref.size() - open - 2));
  return param.find_first_of("[]") == std::string::npos;
}

namespace {
// ngspice's names of instance parameters that anasim names otherwise.
std::string_view param_alias(std::string_view name) {
  if (name == "resistance") return "r";
  if (name == "capacitance" || name == "cap") return "c";
  if (name == "inductance") return "l";
  return name;
}
bool one_of(std::string_view key, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (k == key) return true;
  return false;
}
}  // namespace

bool device_query(const DeviceType& type, std::string_view name, DeviceQuery& q, std::string* known) {
  const bool current = one_of(type.key, {"r", "c", "l", "v", "d", "e", "h"});
  const bool power = one_of(type.key, {"r", "c", "d"});
  if ((name == "i" || (name == "id" && type.key == "d")) && current) {
    q = {DeviceQuery::Kind::Current, -1, "A"};
    return true;
  }
  if (name == "p" && power) {
    q = {DeviceQuery::Kind::Power, -1, "W"};
    return true;
  }
  const std::string_view pname = param_alias(name);
  for (size_t k = 0; k < type.params.size(); ++k) {
    const ParamSpec& s = type.params[k];
    if (s.kind == ParamKind::Real && (pname == s.name || (s.alias && pname == s.alias))) {
      q = {DeviceQuery::Kind::Param, static_cast<int>(k), s.unit};
      return true;
    }
  }
  if (known) {
    std::string list = current ? (type.key == "d" ? "i, id" : "i") : "";
    if (power) list += ", p";
    for (const ParamSpec& s : type.params)
      if (s.kind == ParamKind::Real) list += fmt::format("{}{}", list.empty() ? "" : ", ", s.name);
    *known = list;
  }
  return false;
}

}  // namespace anasim
