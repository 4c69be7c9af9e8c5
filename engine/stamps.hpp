// The few stamp kinds every device (and every composite block) is built from: a two-terminal admittance,
// a transconductance, a current injection and a voltage-defined branch. Each declares its matrix entries
// once and then stamps real (DC/transient) or complex (AC) values from one template.
#pragma once
#include "engine/device.hpp"

namespace anasim {

// Admittance y between unknowns a and b [S].
struct AdmittanceStamp {
  Offset aa = 0, ab = 0, ba = 0, bb = 0;
  void declare(PatternBuilder& p, UnknownIndex a, UnknownIndex b) {
    p.entry(a, a, &aa); p.entry(a, b, &ab); p.entry(b, a, &ba); p.entry(b, b, &bb);
  }
  template <class T> void stamp(T* A, T y) const { A[aa] += y; A[bb] += y; A[ab] -= y; A[ba] -= y; }
};

// Current g * (v(cp) - v(cn)) flowing from p through the device to n [S].
struct TransconductanceStamp {
  Offset pcp = 0, pcn = 0, ncp = 0, ncn = 0;
  void declare(PatternBuilder& pb, UnknownIndex p, UnknownIndex n, UnknownIndex cp, UnknownIndex cn) {
    pb.entry(p, cp, &pcp); pb.entry(p, cn, &pcn); pb.entry(n, cp, &ncp); pb.entry(n, cn, &ncn);
  }
  template <class T> void stamp(T* A, T g) const { A[pcp] += g; A[pcn] -= g; A[ncp] -= g; A[ncn] += g; }
};

// Independent current i flowing from a through the device to b [A] (rhs only).
struct CurrentStamp {
  Offset a = 0, b = 0;
  void declare(PatternBuilder& p, UnknownIndex ua, UnknownIndex ub) { a = p.rhs(ua); b = p.rhs(ub); }
  template <class T> void stamp(T* rhs, T i) const { rhs[a] -= i; rhs[b] += i; }
};

// Branch current unknown br flowing from p through the device to n, with the branch equation
// v(p) - v(n) + (further terms stamped by the device) = rhs. KCL entries are +1/-1, constant.
struct BranchStamp {
  UnknownIndex br;
  Offset p_br = 0, n_br = 0, br_p = 0, br_n = 0, rhs = 0;
  void declare(PatternBuilder& pb, UnknownIndex p, UnknownIndex n, UnknownIndex branch) {
    br = branch;
    pb.entry(p, br, &p_br); pb.entry(n, br, &n_br); pb.entry(br, p, &br_p); pb.entry(br, n, &br_n);
    rhs = pb.rhs(br);
  }
  template <class T> void stamp_incidence(T* A) const { A[p_br] += T(1); A[n_br] -= T(1); A[br_p] += T(1); A[br_n] -= T(1); }
};

}  // namespace anasim
