// Built-in device registry: an explicit list, built on first use.
#include "devices/registry.hpp"
#include <vector>

namespace anasim {

namespace {
class BuiltinCatalog : public DeviceCatalog {
 public:
  BuiltinCatalog() {
    types_.push_back(make_resistor_type());
    types_.push_back(make_capacitor_type());
    types_.push_back(make_inductor_type());
    types_.push_back(make_vsource_type());
    types_.push_back(make_isource_type());
    types_.push_back(make_vcvs_type());
    types_.push_back(make_vccs_type());
    types_.push_back(make_cccs_type());
    types_.push_back(make_ccvs_type());
    types_.push_back(make_diode_type());
    types_.push_back(make_crossbar_type());
    types_.push_back(make_dac_type());
    types_.push_back(make_adc_type());
    types_.push_back(make_opamp_type());
    types_.push_back(make_bsource_type());
  }
  const DeviceType* find(const std::string& key) const override {
    for (const auto& t : types_)
      if (t->key == key || t->long_name == key) return t.get();
    return nullptr;
  }
  std::vector<const DeviceType*> all() const override {
    std::vector<const DeviceType*> v;
    for (const auto& t : types_) v.push_back(t.get());
    return v;
  }
 private:
  std::vector<std::unique_ptr<DeviceType>> types_;
};
}  // namespace

const DeviceCatalog& builtin_catalog() {
  static const BuiltinCatalog catalog;
  return catalog;
}

}  // namespace anasim
