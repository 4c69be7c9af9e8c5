// Writes an elaborated netlist as a flat ngspice-compatible deck (same devices, options, analyses).
#pragma once
#include <string>
#include "engine/elaborate.hpp"

namespace anasim {

// Deck text for `fn`: title, models, devices (via DeviceType::spice_line), .options, .ic, analyses, .end.
std::string spice_deck(const FlatNetlist& fn);

// Refuses node names ngspice would read as something else (white space, control characters, = ( ) , ; $
// quotes, braces) with a message naming the node.
Status check_spice_names(const FlatNetlist& fn);

// Writes spice_deck(fn) to path through write_output_file() (unique temporary, checked writes, rename;
// "-" = standard output) after check_spice_names().
Status export_spice(const FlatNetlist& fn, const std::string& path);

}  // namespace anasim
