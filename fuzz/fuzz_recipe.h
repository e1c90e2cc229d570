/* fuzz_recipe.h — what the structure-aware targets (fuzz_hdf5, fuzz_mat)
 * share: the input read as a recipe, one choice per byte, and the values a
 * recipe may put in a file (from NaN to 1e300). */
#ifndef NLE_FUZZ_RECIPE_H
#define NLE_FUZZ_RECIPE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const uint8_t *p;
  size_t n;
} recipe;

/* The next choice among mod (0 once the recipe is used up). */
static inline unsigned take(recipe *r, unsigned mod) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++ % mod;
}

static const double recipe_values[16] = {0, 1, 2, 3, -1, 0.5, 7, 100, 1e10, 2147483648.0, -2147483649.0, 1e30,
                                         1e300, NAN, INFINITY, 4};

#endif
