/* vecmath.h — glibc's vector exp and log1p (libmvec, at most 4 ulp). glibc
 * declares their SIMD variants only under -ffast-math, which this library
 * does not use; declaring them here lets `#pragma omp simd` loops call them.
 * Include after <math.h>. */
#ifndef NLE_CORE_VECMATH_H
#define NLE_CORE_VECMATH_H

#include <math.h>

#if defined(_OPENMP) && defined(__x86_64__) && defined(__GLIBC__)
#pragma omp declare simd notinbranch
double exp(double x);
#pragma omp declare simd notinbranch
double log1p(double x);
#endif

#endif
