// Helpers shared by the SPICE and YAML netlist parsers, and the reader chosen by file extension.
#include "engine/netlist.hpp"
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include "engine/parse.hpp"

namespace anasim {

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_ground_name(std::string_view node) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (node.size() == 1) return node[0] == '0';
  return node.size() == 3 && lower(node[0]) == 'g' && lower(node[1]) == 'n' && lower(node[2]) == 'd';
}

bool is_yaml_path(const std::string& path) {
  std::string ext = to_lower(std::filesystem::path(path).extension().string());
  return ext == ".yaml" || ext == ".yml";
}

Status parse_netlist(const std::string& path, const DeviceCatalog& cat, ParsedNetlist& out,
                     const AnalysisCatalog* analyses) {
  out = ParsedNetlist{};
  std::string text, why;
  if (!detail::read_text_file(path, text, why))
    return Status::input(fmt::format("cannot open netlist '{}': {}", path, why));
  const SourceLoc whole = SourceLoc::whole(path);  // the file as a whole (no line)
  if (text.find('\0') != std::string::npos)
    return Status::input(fmt::format("'{}' is not a text netlist (it contains NUL bytes)", path), whole);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::input(fmt::format("netlist '{}' is empty", path), whole);
  if (is_yaml_path(path)) return parse_yaml_string(text, path, cat, out, analyses);
  return parse_spice_string(std::move(text), path, cat, out);
}

namespace detail {

bool read_text_file(const std::string& path, std::string& text, std::string& why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    why = std::strerror(EISDIR);
    return false;
  }
  // Device nodes (/dev/zero, /dev/urandom) never end: refused. Pipes are read up to kMaxStreamBytes.
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block) {
    why = "a device, not a netlist file";
    return false;
  }
  constexpr std::size_t kMaxStreamBytes = std::size_t(1) << 30;
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    why = std::strerror(errno ? errno : ENOENT);
    return false;
  }
  text.clear();
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > 0) {  // a regular file: one read, no copies (decks of 10^6 lines)
    text.resize(static_cast<size_t>(size));
    text.resize(std::fread(&text[0], 1, text.size(), f));
  }
  char buf[1 << 16];  // then whatever else there is (pipes, a file that grew)
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, got);
    if (text.size() > kMaxStreamBytes && type != std::filesystem::file_type::regular) {
      std::fclose(f);
      why = "more than 1 GiB from a pipe or stream";
      return false;
    }
  }
  bool failed = std::ferror(f) != 0;
  int e = errno;
  std::fclose(f);
  if (failed) {
    why = std::strerror(e ? e : EIO);
    return false;
  }
  return true;
}

std::string resolve_include(const std::string& including_file, const std::string& name) {
  std::filesystem::path p(name);
  if (p.is_absolute()) return name;
  std::filesystem::path dir = std::filesystem::path(including_file).parent_path();
  return dir.empty() ? name : (dir / p).string();
}

}  // namespace detail
}  // namespace anasim
