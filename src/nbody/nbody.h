/* nbody.h — the kernel-sum engines' internal API for the other stages
 * (the models in src/nle/ and the out-of-sample maps): the public sums are
 * in nlembed.h, these are the pieces that keep state between calls or serve
 * one model's needs. */
#ifndef NLE_NBODY_H
#define NLE_NBODY_H

#include "../core/internal.h"

/* Barnes-Hut for t-SNE's repulsion in one traversal: S = sums of the
 * Student-t kernel K, S2 = sums of K^2, S2x = sums of K^2 x_m (src/nbody). */
nle_status nle__kernel_sums_bh_student_pair(nle_ctx *ctx, const nle_matd *X, double theta, double *S, double *S2,
                                            double *S2x);
/* FFT-interpolation work space: plans, grids and transformed kernels kept
 * between calls of the same grid shape (src/nbody/fft_interp.c). */
typedef struct nle__fft_ws nle__fft_ws;
nle__fft_ws *nle__fft_ws_new(void);
void nle__fft_ws_free(nle__fft_ws **ws);
/* Whether X's extent fits the grid at the requested box width (else the
 * boxes widen and the accuracy drops). */
int nle__fft_grid_fits(const nle_matd *X, const nle_fft_opts *opts);
/* About how many nodes that grid has (0 when it does not fit). */
double nle__fft_grid_nodes(const nle_matd *X, const nle_fft_opts *opts);
/* nle_kernel_sums_fft with a work space (may be NULL). */
nle_status nle__kernel_sums_fft_ws(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel kernel,
                                   const nle_fft_opts *opts, double *S, double *Sx);
/* A kernel on the FFT grid: K(|r|^2), or with moment t >= 0 the t-th
 * component of the vector kernel r K(|r|^2), r = target - source. Sums of
 * the vector kernel are forces that need no moments of the charges: no
 * cancellation between x_n S_n and S^x_n, whose interpolation errors grow
 * with the map's extent. */
typedef struct {
  nle_kernel kernel;
  int moment;
} nle__grid_kernel;
/* The repulsion of X by FFT interpolation in one spreading and d + 1
 * transforms: F_n = sum_{m != n} Kf(|x_n - x_m|^2) (x_n - x_m) for the
 * force kernel Kf, and for the energy kernel K either the per-point sums
 * S_n = sum_{m != n} K (S not NULL, one more transform) or only their total
 * *z (S NULL). ws may be NULL. */
nle_status nle__fft_forces(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                          nle_kernel force_kernel, const nle_fft_opts *opts, double *S, double *z, double *F);
/* The same with *z (S NULL) for the targets rows [row0, row1) of X alone,
 * F's rows there (indexed as in X), the sources all of X, and the 2-D
 * grid's transforms divided among ctx's ranks (fft_slab.c: each rank its
 * share of the row chunks and column strips, two all-to-alls between, the
 * node rows then shared): collective, every rank passing all of X and its
 * rows, *z the same on every rank. Rows in whole blocks of 1,024 (the
 * ranks' canonical rows are); ws not NULL. F's rows and *z are
 * nle__fft_forces' bits. */
nle_status nle__fft_forces_rows(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                                nle_kernel force_kernel, const nle_fft_opts *opts, size_t row0, size_t row1, double *z,
                                double *F);
/* phi[n, c] = sum_m K_c(|tgt_n - src_m|^2) q_c(m) over all sources, a
 * source at the target included, for channels c with kernel
 * kernels[chan_kernel[c]] (at most 4 kernels, 8 channels) and charges from
 * column chan_charge[c] of the src rows x nq matrix `charges` (-1: unit).
 * ws may be NULL (a temporary one). */
nle_status nle__fft_convolve(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *src, const double *charges, size_t nq,
                             const nle_matd *tgt, const nle__grid_kernel *kernels, size_t nkernels, const int *chan_kernel,
                             const int *chan_charge, size_t nch, const nle_fft_opts *opts, double *phi);

/* The convolved grids of fixed sources (nle__fft_convolve's channels),
 * interpolated at any targets inside the bounding box of src and `region`
 * (e.g. two corner points): one grid convolution, then O(M p^d) per call. */
typedef struct nle__fft_field nle__fft_field;
nle_status nle__fft_field_new(nle_ctx *ctx, const nle_matd *src, const double *charges, size_t nq,
                              const nle_matd *region, const nle__grid_kernel *kernels, size_t nkernels,
                              const int *chan_kernel, const int *chan_charge, size_t nch, const nle_fft_opts *opts,
                              nle__fft_field **out);
nle_status nle__fft_field_eval(nle_ctx *ctx, const nle__fft_field *f, const nle_matd *tgt, double *phi);
/* The same on the calling thread alone, for a caller inside a parallel
 * block (the field is only read: blocks may evaluate at once); tgt must
 * have the field's dimension. */
void nle__fft_field_eval_serial(const nle__fft_field *f, const nle_matd *tgt, double *phi);
void nle__fft_field_free(nle__fft_field **f);

/* Fast Gauss transform between separate sets (src/nbody/fgt.c): for every
 * target t, S[t] = sum_s exp(-|t - s|^2) and F[t, :] = sum_s (s - t)
 * exp(-|t - s|^2), over all sources (one at t included). */
nle_status nle__fgt_sums(nle_ctx *ctx, const nle_matd *src, const nle_matd *tgt, const nle_fgt_opts *opts,
                         double *S, double *F);
/* The same with the sources' part (grid over src and `region`, e.g. two
 * corner points; sorted sources; Hermite series) planned once and
 * evaluated at any targets inside that region. One evaluation at a time. */
typedef struct nle__fgt_plan nle__fgt_plan;
nle_status nle__fgt_plan_new(nle_ctx *ctx, const nle_matd *src, const nle_matd *region, const nle_fgt_opts *opts,
                             nle__fgt_plan **plan);
nle_status nle__fgt_plan_eval(nle_ctx *ctx, nle__fgt_plan *plan, const nle_matd *tgt, double *S, double *F);
void nle__fgt_plan_free(nle__fgt_plan **plan);
/* Whether X's extent fits the transform's box grid. */
int nle__fgt_grid_fits(const nle_matd *X, const nle_fgt_opts *opts);

#endif
