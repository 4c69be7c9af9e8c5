// NameIndex: a set of names stored as indices into the vector that holds the named objects (devices, nodes,
// models), for netlists of 10^5..10^6 names (at most 2^31). Open addressing over 8-byte (hash, index) slots:
// adding a name copies no string and allocates nothing but the occasional rehash.
#pragma once
#include <sys/mman.h>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace anasim {

class NameIndex {
 public:
  // Room for `n` names without a rehash.
  void reserve(size_t n) {
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    if (size > size_) rehash(size);
  }
  // Adds `name` as object `idx` unless it is already there. Returns the index of the first object of that name
  // and whether `name` was added. name_of(k) is the name of object k (anything comparable to a string_view).
  template <class NameOf>
  std::pair<size_t, bool> try_emplace(std::string_view name, size_t idx, const NameOf& name_of) {
    if (2 * (count_ + 1) > size_) rehash(std::max<size_t>(16, 2 * size_));
    const uint64_t h = hash(name);
    const size_t mask = size_ - 1;  // < 2^32: tables hold fewer than 2^31 names
    for (size_t k = h & mask;; k = (k + 1) & mask) {
      Slot& sl = slots_[k];
      if (sl.idx1 == 0) {
        sl = Slot{tag(h), static_cast<uint32_t>(idx + 1)};
        ++count_;
        return {idx, true};
      }
      if (sl.tag == tag(h) && std::string_view(name_of(sl.idx1 - 1)) == name) return {sl.idx1 - 1, false};
    }
  }
  // Index of the object named `name`, or npos.
  template <class NameOf>
  size_t find(std::string_view name, const NameOf& name_of) const {
    if (size_ == 0) return npos;
    const uint64_t h = hash(name);
    const size_t mask = size_ - 1;
    for (size_t k = h & mask;; k = (k + 1) & mask) {
      const Slot& sl = slots_[k];
      if (sl.idx1 == 0) return npos;
      if (sl.tag == tag(h) && std::string_view(name_of(sl.idx1 - 1)) == name) return sl.idx1 - 1;
    }
  }
  // Starts loading the slot where a look-up of `name` begins, for a look-up some time later (a table of 10^6
  // slots is probed at random: waited for, each probe is a cache miss).
  void prefetch(std::string_view name) const {
    if (size_ != 0) __builtin_prefetch(&slots_[hash(name) & (size_ - 1)]);
  }
  void clear() {
    slots_.reset();
    size_ = count_ = 0;
  }
  static constexpr size_t npos = static_cast<size_t>(-1);

 private:
  // 8 bytes: a table of 10^5 names is randomly accessed, so its size is what its look-ups cost.
  struct Slot {
    uint32_t tag = 0;   // low half of the name's hash (its low bits pick the slot, so a rehash needs no names)
    uint32_t idx1 = 0;  // object index + 1; 0 = empty slot
  };
  // Frees slot storage from allocate().
  struct FreeSlots {
    void operator()(Slot* p) const { std::free(p); }
  };
  std::unique_ptr<Slot[], FreeSlots> slots_;  // size_ slots, at most half full
  size_t size_ = 0;                           // 0 or a power of two
  size_t count_ = 0;

  static uint32_t tag(uint64_t h) { return static_cast<uint32_t>(h); }

  static uint64_t hash(std::string_view s) {  // FNV-1a, then a final mix for the low bits used as the slot
    uint64_t h = 14695981039346656037ull;
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h ^ (h >> 29);
  }
  // size zeroed slots. Tables of 2 MB and more (from 262,144 slots, a netlist of ~10^5 names) go in transparent
  // huge pages where the kernel has them: their probes land on random pages, and with 4-kB pages nearly every
  // look-up of a 10^6-slot table missed the TLB.
  static std::unique_ptr<Slot[], FreeSlots> allocate(size_t size) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = size * sizeof(Slot);
    void* p = nullptr;
    if (bytes >= kHuge) {
      p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
      if (p) ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without huge pages the table works as before
    } else {
      p = std::malloc(bytes);
    }
    if (!p) throw std::bad_alloc();
    std::fill_n(static_cast<Slot*>(p), size, Slot{});
    return std::unique_ptr<Slot[], FreeSlots>(static_cast<Slot*>(p));
  }
  void rehash(size_t size) {  // size: a power of two
    std::unique_ptr<Slot[], FreeSlots> old = allocate(size);
    std::swap(old, slots_);
    const size_t old_size = std::exchange(size_, size);
    const size_t mask = size_ - 1;
    for (size_t i = 0; i < old_size; ++i) {
      const Slot& sl = old[i];
      if (sl.idx1 == 0) continue;
      size_t k = sl.tag & mask;
      while (slots_[k].idx1 != 0) k = (k + 1) & mask;
      slots_[k] = sl;
    }
  }
};

// The name_of for a NameIndex into v: k -> v[k].name.
template <class T>
auto names_of(const std::vector<T>& v) {
  return [&v](size_t k) -> const std::string& { return v[k].name; };
}

}  // namespace anasim
