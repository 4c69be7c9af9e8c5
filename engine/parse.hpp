// Netlist readers: SPICE decks and YAML netlists, both producing a ParsedNetlist (see netlist.hpp and
// NETLIST_FORMAT.md). Every parsed object keeps its SourceLoc; errors are located Status values.
#pragma once
#include <string>
#include <vector>
#include "engine/analysis_type.hpp"
#include "engine/device.hpp"
#include "engine/netlist.hpp"

namespace anasim {

// Reads a SPICE deck (first line is the title). `out` is reset first.
Status parse_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out);
// Reads a YAML netlist. `out` is reset first. `analyses` (may be null) adds extension analysis kinds
// (analysis_type.hpp) to op, dc, tran and ac.
Status parse_yaml(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out,
                  const AnalysisCatalog* analyses = nullptr);
// Picks the reader by extension: .yaml / .yml -> YAML, anything else (.cir .sp .spice .net .ckt .deck ...) -> SPICE.
// Extension analyses exist in YAML netlists only.
Status parse_netlist(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out,
                     const AnalysisCatalog* analyses = nullptr);

// Same as above on in-memory text; `pseudo_name` is used in locations and to resolve relative includes.
Status parse_spice_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                          ParsedNetlist& out);
// The same, taking the text over (a deck of 10^6 lines is not copied).
Status parse_spice_string(std::string&& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                          ParsedNetlist& out);
Status parse_yaml_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                         ParsedNetlist& out, const AnalysisCatalog* analyses);
Status parse_yaml_string(const std::string& text, const std::string& pseudo_name, const DeviceCatalog& cat,
                         ParsedNetlist& out);

// True if the path names a YAML netlist (.yaml / .yml, case-insensitive).
bool is_yaml_path(const std::string& path);

namespace detail {

constexpr int kMaxIncludeDepth = 16;  // nesting limit for .include / include:

// Reads a whole file. On failure returns false and sets `why` to strerror(errno).
bool read_text_file(const std::string& path, std::string& text, std::string& why);
// Resolves an include path relative to the directory of the including file (absolute paths unchanged).
std::string resolve_include(const std::string& including_file, const std::string& name);

// Appends an included file to `out` (SPICE: no title line; YAML: its sections are merged). `depth` is the
// nesting depth of the included file; `at` locates the include directive for open/recursion errors.
Status include_spice(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out, int depth,
                     const SourceLoc& at);
Status include_yaml(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out, int depth,
                    const SourceLoc& at);

// Reads one measurement in .meas syntax without the card ("tran t1 WHEN v(out)=0.5"), for YAML's measure:
// list; every location of the result (and of an error) is `at`.
Status parse_measure(const std::string& text, const SourceLoc& at, const DeviceCatalog& cat, MeasureSpec& out);

}  // namespace detail
}  // namespace anasim
