// The neural-network evaluations as netlist analyses (engine/analysis_type.hpp): `nn_eval` (accuracy of a model
// through the mapped circuit, like `anasim nn eval --config`) and `nn_mc` (mismatch Monte Carlo with an optional
// parameter sweep, like `anasim nn mc`). The front end adds them to the AnalysisCatalog it hands the parser.
//
// Both take the model file and the hardware mapping from the netlist: `config: FILE` (a YAML file with a
// `hardware:` section), else the netlist's own top-level `hardware:` section (same keys, nn/hardware.cpp's
// table). File names are relative to the file they are written in. The data set is looked up as by `anasim nn`:
// the directory given to the constructor (`anasim run --data DIR`), else $ANASIM_DATA, else the defaults.
#pragma once
#include <memory>
#include <string>
#include "engine/analysis_type.hpp"

namespace anasim::nn {

// `nn_eval`: results per test image (sweep "sample": label, digital and analog class) and scalars
// (digital_accuracy, analog_accuracy, agreement [%], samples, opamps, timing, MNA reference differences).
std::unique_ptr<AnalysisType> make_eval_analysis(const std::string& data_dir);

// `nn_mc`: per-trial accuracy [%] (sweep "trial"; one column per sweep point, "accuracy" or
// "accuracy(PARAM=value)") and scalars per point (mean, std, min, p5 [%]), digital_accuracy, seconds_per_trial.
std::unique_ptr<AnalysisType> make_mc_analysis(const std::string& data_dir);

// Adds every nn analysis to `cat`.
void add_analyses(AnalysisCatalog& cat, const std::string& data_dir);

}  // namespace anasim::nn
