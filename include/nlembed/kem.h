/* nlembed/kem.h — kernel eigenmaps (Brand 2003, seed 004). Part of the
 * public header: include <nlembed.h>. */
#ifndef NLEMBED_KEM_H
#define NLEMBED_KEM_H

#include "spectral.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_KEM_H */
