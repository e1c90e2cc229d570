/* nlembed.h — the public header of libnlembed, nonlinear dimensionality
 * reduction in C11. It includes one header per stage of the pipeline,
 * include/nlembed/<stage>.h, in pipeline order: core, io, neighbors,
 * affinity, graph, spectral, nbody, nonlinear, metrics. Include this one; the
 * stage headers follow the conventions below and include what they need.
 *
 * Conventions (read these once; every function below follows them):
 *
 *   - Names: `nle_` is public, `nle__` is internal (not in this header), `NLE_`
 *     is a macro or enumerator. Most names read module_object_verb
 *     (`nle_dataset_read`, `nle_model_eval`, `nle_outputs_commit`); the
 *     writers are `nle_write_*`, the kNN searches `nle_knn_<method>` and the
 *     kernel sums `nle_kernel_sums_<engine>`.
 *   - Argument order: the context first, then inputs, then options, then the
 *     out-pointers that receive results.
 *   - Every fallible call returns an `nle_status`: 0 is success, a negative value
 *     is an error, a positive value is a warning (the result is usable, e.g. an
 *     iteration that did not converge). The text of the last error, naming what
 *     failed and where, is in `nle_ctx_error(ctx)`.
 *   - The library never prints, never exits and never aborts; progress and log
 *     lines go through callbacks held by the context.
 *   - Ownership: the caller owns its arrays, and the library keeps no pointer to
 *     them after a call returns, except where a constructor says so: a model
 *     (nle_model_new) keeps its spec's matrices, which must outlive it, and the
 *     context keeps its callbacks' user pointers. What the library creates
 *     comes back through an out-pointer and is released with the matching
 *     `nle_*_free(&p)`, which sets the pointer to NULL and accepts NULL.
 *   - Options are plain structs filled with their defaults by `nle_*_opts_init`
 *     (or `nle_*_spec_init`); a zero means "off" or "none" where its comment
 *     says so, and an automatic choice is NLE_AUTO (the one zero that means
 *     "the default" is nle_ctx_set_max_memory's, a setter); each field
 *     documents its default and range. Passing NULL for an options pointer
 *     means the defaults. A field documented as
 *     taking NLE_AUTO leaves the choice to the library, which resolves it
 *     from the data and the other options and reports what it chose.
 *   - Points are row-major `float` (N x D); embeddings row-major `double` (N x d).
 *   - Randomness comes only from the context's seed: the same seed gives the same
 *     result bit for bit, whatever the number of threads.
 */
#ifndef NLEMBED_H
#define NLEMBED_H

#include "nlembed/core.h"
#include "nlembed/io.h"
#include "nlembed/neighbors.h"
#include "nlembed/affinity.h"
#include "nlembed/graph.h"
#include "nlembed/spectral.h"
#include "nlembed/mds.h"
#include "nlembed/kem.h"
#include "nlembed/estimator.h"
#include "nlembed/nbody.h"
#include "nlembed/nonlinear.h"
#include "nlembed/metrics.h"

#endif /* NLEMBED_H */
