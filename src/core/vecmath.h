/* vecmath.h — glibc's vector exp and log1p (libmvec, at most 4 ulp), and a
 * log1p of this library's own in plain IEEE arithmetic. glibc declares its
 * SIMD variants only under -ffast-math, which this library does not use;
 * declaring them here lets `#pragma omp simd` loops call them. Include
 * after <math.h>. */
#ifndef NLE_CORE_VECMATH_H
#define NLE_CORE_VECMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_OPENMP) && defined(__x86_64__) && defined(__GLIBC__)
#pragma omp declare simd notinbranch
double exp(double x);
#pragma omp declare simd notinbranch
double log1p(double x);
#endif

/* log1p(x) within 2 ulp of the true value (tests/test_core.c checks it
 * against libm), from + - * / and bit moves alone, so that every
 * instruction set's vector loop and the scalar call give the same bits:
 * libmvec's log1p has one version per instruction set, and a loop cloned
 * for AVX-512 with it would differ in the last bits from the x86-64 one
 * (hence its energies ran in 2-lane SSE, 15% of a t-SNE transform).
 * 1 + x = 2^e m with m in [sqrt(1/2), sqrt(2)), what the rounding of 1 + x
 * lost added back as (x - (u - 1)) / u, and
 * log m = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), s = (m - 1)/(m + 1),
 * |s| <= 0.1716: eleven terms leave a truncation below 1e-17. */
static inline double nle__log1p(double x) {
  const double ln2_hi = 6.93147180369123816490e-01; /* ln 2 to 32 bits: e ln2_hi is exact */
  const double ln2_lo = 1.90821492927058770002e-10; /* ln 2 - ln2_hi */
  double u = 1.0 + x, lost = (x - (u - 1.0)) / u;
  /* m from the mantissa, halved when above sqrt(2) (mantissa bits above
   * sqrt(2)'s 0x6a09e667f3bcd), in integers: no select for GCC to turn into
   * a branch */
  uint64_t bits;
  memcpy(&bits, &u, sizeof bits);
  uint64_t mant = bits & 0x000fffffffffffffULL, high = mant > 0x6a09e667f3bcdULL;
  uint64_t mbits = mant | ((0x3ffULL - high) << 52), ebits = (((bits >> 52) & 0x7ff) + high) | 0x4330000000000000ULL;
  double m, e; /* e: 2^52 + the biased exponent, read as a double */
  memcpy(&m, &mbits, sizeof m);
  memcpy(&e, &ebits, sizeof e);
  e = (e - 4503599627370496.0) - 1023.0;
  double f = m - 1.0, s = f / (2.0 + f), z = s * s;
  double p = 1.0 / 23.0;
  p = p * z + 1.0 / 21.0;
  p = p * z + 1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z + 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  double two_s = 2.0 * s, r = e * ln2_hi + ((two_s * (z * p) + (e * ln2_lo + lost)) + two_s);
  /* +inf, -1 and below -1 (and NaN) by a blend of bits, not a branch: GCC
   * would move the arithmetic into the ordinary case's branch and, the
   * arithmetic being able to trap, not vectorise the loop without AVX-512 */
  int ordinary = isgreater(x, -1.0) & isless(x, INFINITY);
  double special = x == -1.0 ? -INFINITY : isgreater(x, -1.0) ? x : NAN;
  uint64_t keep = -(uint64_t)ordinary, rb, sb;
  memcpy(&rb, &r, sizeof rb);
  memcpy(&sb, &special, sizeof sb);
  rb = (rb & keep) | (sb & ~keep);
  memcpy(&r, &rb, sizeof r);
  return r;
}

#endif
