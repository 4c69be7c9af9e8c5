// SPICE reader: source locations of logical lines and tokens, the tokenizer, and name=value pairs.
#include "engine/spice_reader.hpp"

namespace anasim::spice {

SourceLoc SpiceParser::phys_loc(const SrcFile& f, int line, int col) {
  SourceLoc l;
  set_phys_loc(l, f, line, col);
  return l;
}

void SpiceParser::set_at(SourceLoc& l, const LLine& L, size_t off) {
  if (off < L.text.size() && L.segs.size() == 1) {  // the common case: a statement on one physical line
    l = SourceLoc(L.file->src, L.segs[0].line, L.segs[0].col + static_cast<int>(off));
    return;
  }
  if (off >= L.text.size()) return set_phys_loc(l, *L.file, L.end_line, L.end_col);
  auto seg = std::upper_bound(L.segs.begin(), L.segs.end(), off,
                              [](size_t o, const LLine::Seg& s) { return o < s.off; }) - 1;
  set_phys_loc(l, *L.file, seg->line, seg->col + static_cast<int>(off - seg->off));
}

SourceLoc SpiceParser::at(const LLine& L, size_t off) {
  SourceLoc l;
  set_at(l, L, off);
  return l;
}

bool SpiceParser::tokenize(const LLine& L, Tokens& toks) {
  toks.clear();
  std::string_view s = L.text;
  size_t i = 0, n = s.size();
  bool space = true;
  while (i < n) {
    char c = s[i];
    unsigned char cc = char_class(c);
    if (cc == kSpace) {
      space = true;
      ++i;
      continue;
    }
    Token t;
    t.off = i;
    t.space_before = space;
    space = false;
    t.len = 1;
    if (cc == kSep) {
      t.kind = c == '=' ? Tk::Eq : c == '(' ? Tk::LParen : c == ')' ? Tk::RParen : Tk::Comma;
    } else {
      size_t j = i;
      for (;;) {
        while (j < n && !(char_class(s[j]) & (kSpace | kSep | kGroup))) ++j;
        if (j >= n || char_class(s[j]) != kGroup) break;
        t.grouped = true;
        if (s[j] == '{') {
          int depth = 0;
          size_t k = j;
          for (; k < n; ++k) {
            if (s[k] == '{') ++depth;
            if (s[k] == '}' && --depth == 0) break;
          }
          if (k >= n) return err(at(L, j), "unbalanced '{': missing '}'");
          j = k + 1;
        } else if (s[j] == '\'' || s[j] == '"') {
          size_t k = s.find(s[j], j + 1);
          if (k == std::string_view::npos) return err(at(L, j), fmt::format("unterminated quote {}", s[j]));
          j = k + 1;
        } else {  // '}'
          return err(at(L, j), "unbalanced '}': no matching '{'");
        }
      }
      t.kind = Tk::Word;
      t.len = j - i;
    }
    i += t.len;
    toks.push_back(t);
  }
  return true;
}

bool SpiceParser::read_named(const LLine& L, const Tokens& t, size_t& i, ParamAssign& pa) {
  pa.name = tok_text(L, t[i]);
  pa.loc = at(L, t[i]);
  i += 2;
  if (!read_value(L, t, i, pa.values.emplace_back(), [&] { return fmt::format("a value after '{}='", pa.name); })) {
    pa.values.pop_back();
    return false;
  }
  return true;
}

}  // namespace anasim::spice
