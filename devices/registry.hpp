// The explicit registry of built-in device types (one line per device in registry.cpp).
#pragma once
#include <memory>
#include "engine/device.hpp"

namespace anasim {

// The catalog of all built-in devices. Constructed on first use (no static self-registration).
const DeviceCatalog& builtin_catalog();

// Factories, one per device file.
std::unique_ptr<DeviceType> make_resistor_type();
std::unique_ptr<DeviceType> make_capacitor_type();
std::unique_ptr<DeviceType> make_inductor_type();
std::unique_ptr<DeviceType> make_vsource_type();
std::unique_ptr<DeviceType> make_isource_type();
std::unique_ptr<DeviceType> make_vcvs_type();
std::unique_ptr<DeviceType> make_vccs_type();
std::unique_ptr<DeviceType> make_cccs_type();
std::unique_ptr<DeviceType> make_ccvs_type();
std::unique_ptr<DeviceType> make_diode_type();
std::unique_ptr<DeviceType> make_crossbar_type();
std::unique_ptr<DeviceType> make_dac_type();
std::unique_ptr<DeviceType> make_adc_type();
std::unique_ptr<DeviceType> make_opamp_type();
std::unique_ptr<DeviceType> make_bsource_type();

}  // namespace anasim
