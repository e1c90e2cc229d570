/* parallel.c — the one parallel loop the kernels share: independent blocks
 * handed out dynamically to OpenMP threads, each thread with its own scratch
 * memory, BLAS serial inside, progress reported from the calling thread, and
 * a stop on cancellation or a failed block. Results must not depend on which
 * thread ran a block; the kernels write per-block outputs and reduce them in
 * index order afterwards. */
#include "internal.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

nle_status nle__for_blocks(nle_ctx *ctx, const char *stage, size_t nblocks, int threads, size_t scratch_bytes,
                           nle__block_fn fn, void *job) {
  size_t done = 0;
  int stop = 0; /* 1: cancelled, 2: out of memory, 3: a block failed */
  int blas_prev = nle__blas_set_threads(1);
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
  {
    void *scratch = scratch_bytes ? malloc(scratch_bytes) : NULL;
    if (scratch_bytes && !scratch) {
#pragma omp atomic write
      stop = 2;
    }
#pragma omp for schedule(dynamic, 1)
    for (size_t b = 0; b < nblocks; b++) {
      int halted;
#pragma omp atomic read
      halted = stop;
      if (halted) continue;
      if (fn(job, b, scratch)) {
#pragma omp atomic write
        stop = 3;
        continue;
      }
      size_t now;
#pragma omp atomic capture
      now = ++done;
#ifdef _OPENMP
      if (omp_get_thread_num() == 0)
#endif
        if (nle__progress_check(ctx, stage, (double)now / (double)nblocks)) {
#pragma omp atomic write
          stop = 1;
        }
    }
    free(scratch);
  }
  nle__blas_set_threads(blas_prev);
  if (stop == 1) return nle__fail(ctx, NLE_ERR_CANCELLED, "%s: cancelled", stage);
  if (stop == 2) return nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory for per-thread work space", stage);
  if (stop == 3) return ctx && ctx->last_status ? ctx->last_status : NLE_ERR_NUMERIC;
  return nle__progress_inner(ctx, stage, 1.0);
}
