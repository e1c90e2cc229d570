/* rng.c — xoshiro256** with splitmix64 seeding; one independent stream per
 * (seed, stream index), so parallel loops stay reproducible. */
#include "nlembed.h"

#include <math.h>
#include <time.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void nle_rng_init(nle_rng *rng, uint64_t seed, uint64_t stream) {
  /* Mix the stream index through its own splitmix step so that neighbouring
   * (seed, stream) pairs do not share state. */
  uint64_t mix = stream;
  uint64_t x = seed ^ splitmix64(&mix);
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

uint64_t nle_rng_u64(nle_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double nle_rng_uniform(nle_rng *rng) { return (double)(nle_rng_u64(rng) >> 11) * 0x1.0p-53; }

double nle_rng_normal(nle_rng *rng) {
  /* Marsaglia's polar method; one value per call keeps the stream stateless. */
  for (;;) {
    double u = 2.0 * nle_rng_uniform(rng) - 1.0, v = 2.0 * nle_rng_uniform(rng) - 1.0;
    double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * sqrt(-2.0 * log(s) / s);
  }
}

uint64_t nle_rng_below(nle_rng *rng, uint64_t n) {
  /* Lemire's multiply-and-reject: unbiased without a division per draw. */
  if (n == 0) return 0;
  __uint128_t m = (__uint128_t)nle_rng_u64(rng) * n;
  uint64_t low = (uint64_t)m;
  if (low < n) {
    uint64_t threshold = -n % n;
    while (low < threshold) {
      m = (__uint128_t)nle_rng_u64(rng) * n;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

void nle_rng_shuffle(nle_rng *rng, int64_t *a, int64_t n) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)nle_rng_below(rng, (uint64_t)i + 1);
    int64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

void nle_rng_sample(nle_rng *rng, int64_t n, int64_t m, int64_t *out) {
  /* Selection sampling (Knuth's algorithm S): sorted output, O(n), no memory. */
  int64_t chosen = 0;
  for (int64_t i = 0; i < n && chosen < m; i++) {
    if ((double)(n - i) * nle_rng_uniform(rng) < (double)(m - chosen)) out[chosen++] = i;
  }
}

double nle_time_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
