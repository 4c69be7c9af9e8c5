// The `anasim nn ...` subcommands (train, eval, import-keras): option parsing and printing only; the work is
// done by the nn/ library.
#pragma once
#include <functional>

namespace CLI {
class App;
class Validator;
}

namespace anasim {

// Registers the `nn` subcommand group on `app`. Call the returned function after app.parse(): it runs the
// selected nn command and returns its exit code (0 success, 2 bad input, 3 numerical failure, 1 other),
// or -1 when the command line selected no nn command.
std::function<int()> add_nn_commands(CLI::App& app);

// A --seed value: decimal digits that fit in 64 bits (CLI11 alone clamps larger values and wraps negative ones).
const CLI::Validator& seed_validator();

}  // namespace anasim
