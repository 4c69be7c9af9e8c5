// Writes an elaborated netlist as a flat ngspice-compatible deck (same devices, options, analyses).
#pragma once
#include <string>
#include "engine/elaborate.hpp"

namespace anasim {

// Deck text for `fn`: title, models, devices (via DeviceType::spice_line), .options, .ic, analyses, .end.
std::string spice_deck(const FlatNetlist& fn);

// Writes spice_deck(fn) to path (temporary file, then rename).
Status export_spice(const FlatNetlist& fn, const std::string& path);

}  // namespace anasim
