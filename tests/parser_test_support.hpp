// Shared support for the parser tests (test_spice_parser.cpp, test_yaml_parser.cpp): a device catalog with the
// syntax of the real one and no devices behind it, parse helpers, and a scratch directory.
#pragma once
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <unistd.h>
#include "engine/parse.hpp"

namespace anasim::test {

// A device catalog with the syntax of the real one and no devices behind it.
class FakeType : public DeviceType {
 public:
  std::unique_ptr<Device> create(const FlatDevice&, Status&) const override { return nullptr; }
};

class FakeCatalog : public DeviceCatalog {
 public:
  FakeCatalog() {
    auto two = [](const char* key, const char* long_name, std::vector<std::string> positional) {
      auto t = std::make_unique<FakeType>();
      t->key = key;
      t->long_name = long_name;
      t->pins = {"p", "n"};
      t->positional = std::move(positional);
      return t;
    };
    types_.push_back(two("r", "resistor", {"r"}));
    types_.push_back(two("c", "capacitor", {"c"}));
    types_.push_back(two("l", "inductor", {"l"}));
    for (const char* k : {"v", "i"}) {
      auto t = two(k, k[0] == 'v' ? "voltage source" : "current source", {});
      t->source_syntax = true;
      types_.push_back(std::move(t));
    }
    for (const char* k : {"e", "g"}) {
      auto t = two(k, k[0] == 'e' ? "vcvs" : "vccs", {"gain"});
      t->pins = {"p", "n", "cp", "cn"};
      types_.push_back(std::move(t));
    }
    for (const char* k : {"f", "h"}) {
      auto t = two(k, k[0] == 'f' ? "cccs" : "ccvs", {"gain"});
      t->needs_control = true;
      types_.push_back(std::move(t));
    }
    auto d = two("d", "diode", {"area"});
    d->pins = {"a", "k"};
    d->model_type = "d";
    d->params = {{"area", "", 1, 0, kInf, "area factor", ParamKind::Real, true},
                 {"off", "", 0, 0, 1, "initially off", ParamKind::Flag}};
    types_.push_back(std::move(d));
  }
  const DeviceType* find(const std::string& key) const override {
    for (const auto& t : types_)
      if (t->key == key) return t.get();
    return nullptr;
  }
  std::vector<const DeviceType*> all() const override {
    std::vector<const DeviceType*> v;
    for (const auto& t : types_) v.push_back(t.get());
    return v;
  }

 private:
  std::vector<std::unique_ptr<FakeType>> types_;
};

inline const FakeCatalog& cat() {
  static FakeCatalog c;
  return c;
}

// The parser under test: parse_spice_string or parse_yaml_string.
using ParseFn = Status (*)(const std::string&, const std::string&, const DeviceCatalog&, ParsedNetlist&);

// Parses text that must succeed.
inline ParsedNetlist parse_ok_with(ParseFn parse, const std::string& text, const std::string& name) {
  ParsedNetlist pn;
  Status st = parse(text, name, cat(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return pn;
}

// Parses text that must fail; returns the first error.
inline Diag parse_err_with(ParseFn parse, const std::string& text, const std::string& name) {
  ParsedNetlist pn;
  Status st = parse(text, name, cat(), pn);
  REQUIRE_FALSE(st.ok());
  return st.errors[0];
}

inline const DeviceInstance& dev(const std::vector<DeviceInstance>& ds, const std::string& name) {
  for (const auto& d : ds)
    if (d.name == name) return d;
  FAIL("no device " << name);
  return ds.front();
}

inline const ParamAssign* param(const DeviceInstance& d, const std::string& name) {
  for (const auto& p : d.params)
    if (p.name == name) return &p;
  return nullptr;
}

inline std::string values(const ParamAssign* p) {
  if (!p) return "<missing>";
  std::string s;
  for (const auto& v : p->values) s += (s.empty() ? "" : "|") + v.text;
  return s;
}

// A scratch directory for this test process (one per process, created on first use).
inline std::string tmp_dir() {
  static std::string dir = [] {
    char buf[] = "/tmp/anasim_parser_test_XXXXXX";
    const char* d = mkdtemp(buf);
    REQUIRE(d != nullptr);
    return std::string(d);
  }();
  std::filesystem::create_directories(dir);  // a test may have removed it
  return dir;
}

inline std::string write_file(const std::string& name, const std::string& text) {
  std::string path = tmp_dir() + "/" + name;
  std::ofstream f(path);
  f << text;
  return path;
}

}  // namespace anasim::test
