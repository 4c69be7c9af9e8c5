// The `anasim nn ...` subcommands (train, eval, import-keras): option parsing and printing only; the work is
// done by the nn/ library.
#pragma once
#include <functional>

namespace CLI {
class App;
}

namespace anasim {

// Registers the `nn` subcommand group on `app`. Call the returned function after app.parse(): it runs the
// selected nn command and returns its exit code (0 success, 2 bad input, 3 numerical failure, 1 other),
// or -1 when the command line selected no nn command.
std::function<int()> add_nn_commands(CLI::App& app);

}  // namespace anasim
