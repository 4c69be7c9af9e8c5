// libFuzzer target: the SPICE reader and the elaborator on arbitrary deck text (no simulation).
#include <cstddef>
#include <cstdint>
#include <string>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace anasim;
  SourceScope scope;  // this input's texts freed after it (declared before everything pointing into them)
  const std::string text(reinterpret_cast<const char*>(data), size);
  ParsedNetlist pn;
  if (!parse_spice_string(text, "fuzz.cir", builtin_catalog(), pn)) return 0;
  FlatNetlist fn;
  (void)elaborate(pn, builtin_catalog(), fn);
  return 0;
}
