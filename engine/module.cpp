// Loader of the optional back-end modules (see module.hpp).
#include "engine/module.hpp"
#include <dlfcn.h>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>
#include <fmt/format.h>

#ifndef ANASIM_MODULE_DIR
#define ANASIM_MODULE_DIR ""
#endif

namespace anasim::module {

namespace {

struct Loaded {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded (handle == nullptr)
};

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Where libanasim_<name>.so may be, in the order module.hpp states.
std::vector<std::string> candidates(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* e = std::getenv("ANASIM_MODULE_DIR"); e && *e) dirs.push_back(e);
  if (*ANASIM_MODULE_DIR) dirs.push_back(ANASIM_MODULE_DIR);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&symbol), &info) && info.dli_fname && *info.dli_fname) {
    char* real = realpath(info.dli_fname, nullptr);  // (the executable's may be relative to the start directory)
    const std::string self = directory_of(real ? real : info.dli_fname);
    std::free(real);
    dirs.push_back(self);
    dirs.push_back(self + "/..");
  }
  std::vector<std::string> files;
  for (const std::string& d : dirs) {
    const std::string f = d + "/libanasim_" + name + ".so";
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  }
  return files;
}

Loaded load(const std::string& name, Scope scope) {
  Loaded out;
  std::string tried;
  for (const std::string& file : candidates(name)) {
    void* h = dlopen(file.c_str(), RTLD_NOW | (scope == Scope::Global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h) {
      const char* why = dlerror();
      tried += fmt::format("\n  {}", why ? why : file + ": not loadable");  // (dlerror names the file)
      continue;
    }
    auto abi = reinterpret_cast<int (*)()>(dlsym(h, "anasim_module_abi"));
    if (!abi || abi() != kModuleAbi) {
      tried += fmt::format("\n  {}: built with another interface (ABI {}, this binary {})", file, abi ? abi() : -1,
                           kModuleAbi);
      dlclose(h);
      continue;
    }
    out.handle = h;
    return out;
  }
  out.error = fmt::format("the module libanasim_{}.so could not be loaded (set ANASIM_MODULE_DIR to the directory "
                          "that holds it); tried:{}", name, tried);
  return out;
}

}  // namespace

void* symbol(const char* name, const char* sym, std::string* error, Scope scope) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, load(name, scope)).first;
  if (!it->second.handle) {
    if (error) *error = it->second.error;
    return nullptr;
  }
  void* f = dlsym(it->second.handle, sym);
  if (!f && error) *error = fmt::format("the module libanasim_{}.so has no function {}", name, sym);
  return f;
}

}  // namespace anasim::module
