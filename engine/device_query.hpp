// ngspice's @device[name] references (.save, .meas): what one reads from a device, an instance parameter or an
// operating quantity, shared by the SPICE reader (which checks them) and the power meter (which records them).
#pragma once
#include <string>
#include <string_view>
#include "engine/device.hpp"

namespace anasim {

struct DeviceQuery {
  enum class Kind { Param, Current, Power };
  Kind kind = Kind::Param;
  int param = -1;    // Param: index into the type's params (a Real parameter)
  std::string unit;  // "A" (Current), "W" (Power), else the parameter's unit
};

// Splits "@name[param]" into its two names (lower-case as given); false when `ref` is not of that form.
bool split_device_ref(std::string_view ref, std::string& device, std::string& param);

// What `name` reads from a device of `type`: a Real instance parameter by its own name, its alias or ngspice's
// (resistance, capacitance/cap, inductance); `i` (a diode's `id`) the current into the device's first pin, or its
// branch current for V, L, E and H [A] (R C L V D E H); `p` the power the device absorbs [W] (R C D).
// False when the type has no such quantity; `known` then lists the names it has, for the message.
bool device_query(const DeviceType& type, std::string_view name, DeviceQuery& q, std::string* known = nullptr);

}  // namespace anasim
