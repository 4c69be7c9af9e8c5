// SPICE reader, lexing: character classes, source files split into physical lines, logical lines ('+'
// continuations joined, with one position segment per physical line), tokens, and the text helpers the reader's
// files share. Internal to the reader (engine/spice_*.cpp); the public entry points are in engine/parse.hpp.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include "engine/device_query.hpp"
#include "engine/expr.hpp"
#include "engine/measure.hpp"
#include "engine/name_index.hpp"
#include "engine/parse.hpp"

namespace anasim::spice {

constexpr int kMaxErrors = 20;

// Character classes, looked up in a table by the scanners. Spaces are std::isspace of the "C" locale (anasim
// never calls setlocale); a NUL byte is an ordinary character.
enum : unsigned char {
  kSpace = 1,    // ' ' \t \n \v \f \r
  kSep = 2,      // = ( ) ,  end a word (not std::strchr: it would also match a NUL byte, giving an empty token)
  kGroup = 4,    // { } ' "  group a word or an expression
  kComment = 8,  // ; $      may start an inline comment
};
constexpr std::array<unsigned char, 256> make_char_classes() {
  std::array<unsigned char, 256> t{};
  for (unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) t[c] = kSpace;
  for (unsigned char c : {'=', '(', ')', ','}) t[c] = kSep;
  for (unsigned char c : {'{', '}', '\'', '"'}) t[c] = kGroup;
  for (unsigned char c : {';', '$'}) t[c] = kComment;
  return t;
}
inline constexpr std::array<unsigned char, 256> kCharClass = make_char_classes();
inline unsigned char char_class(char c) { return kCharClass[static_cast<unsigned char>(c)]; }

inline bool is_space(char c) { return char_class(c) == kSpace; }
inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// The characters that matter to comment_start: ; $ { } ' " (written without the table so that it vectorizes).
inline unsigned char is_comment_or_group(char c) {
  return (c == ';') | (c == '$') | (c == '{') | (c == '}') | (c == '\'') | (c == '"');
}
// Position of the first of ; $ { } ' " in s at or after i, or s.size(). Scans blocks of 32 characters at a
// time: most lines of a large deck have none of these.
inline size_t find_comment_or_group(std::string_view s, size_t i) {
  const char* p = s.data();
  size_t n = s.size();
  for (; i + 32 <= n; i += 32) {
    unsigned char any = 0;
    for (size_t k = 0; k < 32; ++k) any |= is_comment_or_group(p[i + k]);
    if (any) break;
  }
  while (i < n && !is_comment_or_group(p[i])) ++i;
  return i;
}

// A source file being read: its registered text (SourceLocs point into it) and a lower-case copy.
struct SrcFile {
  const SourceFile* src = nullptr;
  std::string lower;     // src->text() in lower case (same offsets)
  bool has_nul = false;  // the text contains a NUL byte
  std::string_view text() const { return src->text(); }
  size_t n_lines() const { return src->spans().size(); }
  // physical line i (0-based): offset into text() and length without terminator, and its text
  std::pair<size_t, size_t> span(size_t i) const { return src->spans()[i]; }
  std::string_view line(size_t i) const { return text().substr(span(i).first, span(i).second); }
  const std::string& path() const { return src->path(); }
};

// Registers a file's text and fills f: lines, lower-case copy, NUL flag.
inline void load(SrcFile& f, const std::string& path, std::string text) {
  f.src = SourceFile::add(path, std::move(text));
  const std::string_view t = f.text();
  f.has_nul = std::memchr(t.data(), '\0', t.size()) != nullptr;
  size_t n = t.size();
  f.lower.resize(n);
  const char* in = t.data();
  char* out = &f.lower[0];
  for (size_t k = 0; k < n; ++k) out[k] = lower(in[k]);
}

// One logical line: physical lines joined at '+' continuations, comments removed. Positions come from one
// segment per physical line: character `off` of a segment starting at seg.off is at seg.line, seg.col + (off -
// seg.off). The buffers are reused from line to line.
struct LLine {
  struct Seg {
    size_t off;  // first character of the segment in text (for segs[1...]: the ' ' that replaces the '+')
    int line;    // its 1-based physical line
    int col;     // its 1-based column
  };
  const SrcFile* file = nullptr;
  std::string_view text;  // lower-case: a view into file->lower, or into joined
  std::string joined;     // the text of a line with continuations
  std::vector<Seg> segs;  // in order of off; segs[0].off == 0
  int end_line = 0;       // position just after the last character
  int end_col = 0;
  // The line in its original case (file names in .include, .title), rebuilt from the source.
  std::string raw() const {
    std::string r(text.size(), ' ');
    for (size_t k = 0; k < segs.size(); ++k) {
      size_t b = segs[k].off + (k > 0), e = k + 1 < segs.size() ? segs[k + 1].off : text.size();
      std::string_view src = file->line(static_cast<size_t>(segs[k].line) - 1);
      src.copy(&r[b], e - b, static_cast<size_t>(segs[k].col) - 1 + (k > 0));
    }
    return r;
  }
};

enum class Tk { Word, Eq, LParen, RParen, Comma };

struct Token {
  Tk kind = Tk::Word;
  size_t off = 0, len = 0;    // into LLine::text
  bool space_before = false;  // whitespace (or line start) precedes the token
  bool grouped = false;       // a word containing { } ' or " (not allowed in device and node names)
};

using Tokens = std::vector<Token>;

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// Strips ';' and '$ ' inline comments (outside braces and quotes). Returns the kept prefix length.
inline size_t comment_start(std::string_view s) {
  int brace = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!(char_class(c) & (kGroup | kComment))) continue;  // the only characters that change the state
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}') {
      if (brace > 0) --brace;
    } else if (brace == 0 && c == ';') {
      return i;
    } else if (brace == 0 && c == '$' && (i == 0 || is_space(s[i - 1])) && (i + 1 == s.size() || is_space(s[i + 1]))) {
      return i;
    }
  }
  return s.size();
}

inline std::string first_defined(const SourceLoc& first, const SourceLoc& here) {
  if (first.file() == here.file()) return fmt::format("first defined at line {}", first.line);
  return fmt::format("first defined at {}:{}", first.file(), first.line);
}

const char* const kSourceKeywords[] = {"dc", "ac", "pulse", "sin", "exp", "pwl", "am", "sffm", "distof1", "distof2"};

inline bool is_source_keyword(std::string_view w) {
  for (const char* k : kSourceKeywords)
    if (w == k) return true;
  return false;
}

// The text of an error-message fragment: a string, or a callable that formats one (only called on an error,
// so the common path formats nothing).
template <class What>
inline std::string what_text(const What& w) {
  if constexpr (std::is_invocable_v<const What&>)
    return w();
  else
    return std::string(w);
}

// The names defined so far, for duplicate checks: NameIndex (engine/name_index.hpp) into the vector that holds
// the named objects (out_.devices, out_.models, ...). The first definition of a name is kept.

}  // namespace anasim::spice
