// Formatting of diagnostics: file:line:col, the offending line and a caret under the column.
#include "engine/types.hpp"
#include <fmt/format.h>

namespace anasim {

std::string Diag::to_string() const {
  if (!loc.valid() && !loc.file.empty()) return fmt::format("{}: error: {}", loc.file, message);  // whole file
  if (!loc.valid()) return fmt::format("error: {}", message);
  std::string s = fmt::format("{}:{}:{}: error: {}", loc.file, loc.line, loc.col, message);
  if (!loc.text.empty()) {
    std::string caret;
    int col = loc.col > 0 ? loc.col : 1;
    for (int i = 1; i < col && i <= static_cast<int>(loc.text.size()); ++i)
      caret += (loc.text[i - 1] == '\t') ? '\t' : ' ';
    s += fmt::format("\n  {}\n  {}^", loc.text, caret);
  }
  return s;
}

std::string Status::to_string() const {
  std::string s;
  for (const auto& e : errors) {
    if (!s.empty()) s += "\n";
    s += e.to_string();
  }
  return s;
}

}  // namespace anasim
