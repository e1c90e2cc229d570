/* nlembed/nbody.h — kernel sums: exact, Barnes-Hut, FFT interpolation, fast
 * Gauss transform. Part of the public header: include <nlembed.h>, whose
 * opening comment states the conventions every declaration here follows. */
#ifndef NLEMBED_NBODY_H
#define NLEMBED_NBODY_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* N-body: kernel sums                                                        */
/* ========================================================================== */

/* Kernels of the squared distance t = |x_n - x_m|^2. */
typedef enum {
  NLE_KERNEL_GAUSSIAN = 0, /* exp(-t): EE, s-SNE, SNE */
  NLE_KERNEL_STUDENT = 1,  /* 1 / (1 + t): t-SNE, t-EE */
  NLE_KERNEL_STUDENT2 = 2, /* 1 / (1 + t)^2: their gradients */
  NLE_KERNEL_COUNT         /* how many there are (range checks) */
} nle_kernel;

/* FFT-accelerated interpolation (the grid method of Linderman et al. for
 * t-SNE, here for every kernel): charges are spread to a regular grid by
 * Lagrange interpolation on `order` equispaced nodes per box and dimension,
 * the kernel is applied by FFT, and the values interpolated back. Cost
 * O(N order^d + G log G) for G grid nodes, which grow with the extent of X,
 * not with N. Accuracy rises with the order and with narrower boxes. */
typedef struct {
  int order;        /* interpolation nodes per box and dimension, 1..12 (3) */
  double box_width; /* widest box side, in kernel length units (0.85) */
  int min_boxes;    /* at least this many boxes along the longest side (8) */
  int max_nodes;    /* at most this many nodes per dimension, >= order;
                       wider boxes beyond. NLE_AUTO (default): 65536 in
                       1-D, 1024 in 2-D (2048 for an embedding model's
                       repulsion: maps of a million points outgrow 1024),
                       128 in 3-D */
  double bh_ratio;  /* embedding models: an evaluation whose grid would
                       have more than bh_ratio N log2 N nodes (a map spread
                       far wider than its points need) goes to Barnes-Hut,
                       then the cheaper (0, the default: never; the CLI's
                       --repulsion auto: 1) */
} nle_fft_opts;
NLE_API void nle_fft_opts_init(nle_fft_opts *o);

/* Fast Gauss transform (dissertation sec. 5.2.2), Gaussian kernel only:
 * boxes of side sqrt(2) ratio kernel lengths; Hermite series for boxes
 * holding at least `cutoff` sources, Taylor series for boxes holding that
 * many targets, the Hermite-to-Taylor translation where both do, direct
 * sums otherwise; boxes further than `reach` box sides apart do not
 * interact. O(N order^d). Accuracy rises with the order. */
typedef struct {
  int order;    /* terms per dimension of each series, 1..12 (6) */
  double ratio; /* r, 0 < r < 1/sqrt 2 (0.5) */
  int cutoff;   /* points in a box before it gets a series, >= 0;
                   NLE_AUTO (default): order^d, order^3 / 2 in 3-D, at
                   least 5; each box pair then takes the cheapest of the
                   sums its boxes allow */
  int reach;    /* K, in box sides, 1..12 (4) */
} nle_fgt_opts;
NLE_API void nle_fgt_opts_init(nle_fgt_opts *o);

/* For every point of X (N x d, d = 1, 2 or 3): S[n] = sum_{m != n}
 * K(|x_n - x_m|^2) and, when Sx is not NULL, Sx[n, :] = sum_{m != n} K(...)
 * x_m (dissertation eq. 5.8), exactly in O(N^2 d). */
NLE_API nle_status nle_kernel_sums_exact(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double *S, double *Sx);
/* The same by Barnes-Hut (dissertation sec. 5.2.1): a 2^d-ary tree of cells
 * (leaves of at most 8 points), and a cell of side l at distance D from x_n
 * to its centre of mass counts as all its points there when l / D < theta
 * (0: exact). O(N log N) for moderate theta; sums do not depend on the
 * number of threads. Accuracy for the Student kernels, measured on uniform
 * and clustered sets in 1-3 dimensions (tests/test_nbody.c): aggregate
 * relative error |S - S_exact| / |S_exact| <= 0.1 theta^2, worst point
 * <= 0.4 theta^2. */
NLE_API nle_status nle_kernel_sums_bh(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double theta, double *S,
                                      double *Sx);

/* Kernel sums by FFT interpolation (nle_fft_opts above). */
NLE_API nle_status nle_kernel_sums_fft(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const nle_fft_opts *opts,
                                       double *S, double *Sx);

/* Gaussian sums by the fast Gauss transform (nle_fgt_opts, above the
 * models); the kernel is exp(-t). Sums do not depend on the thread count. */
NLE_API nle_status nle_kernel_sums_fgt(nle_ctx *ctx, const nle_matd *X, const nle_fgt_opts *opts, double *S,
                                       double *Sx);
/* The a-priori error bound of the fast Gauss transform in d dimensions per
 * unit of total charge: dissertation eq. 5.7 (the largest of eqs. 5.5-5.7)
 * plus exp(-(reach sqrt(2) ratio)^2) for the boxes left out. Loose: the
 * measured errors (nle_kernel_sums_error) are orders of magnitude lower. */
NLE_API double nle_fgt_error_bound(size_t d, const nle_fgt_opts *opts);

/* Measured error of approximate sums S (and Sx, may be NULL) against the
 * exact ones at `sample` points drawn with `seed`: O(sample N d). */
typedef struct {
  double sums;    /* sum |S_n - S*_n| / sum S*_n over the sample */
  double worst;   /* max |S_n - S*_n| / S*_n */
  double moments; /* |Sx - Sx*| / |Sx*| (Frobenius) over the sample; 0 without Sx */
  size_t sample;
} nle_sums_error;
NLE_API nle_status nle_kernel_sums_error(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const double *S,
                                         const double *Sx, size_t sample, uint64_t seed, nle_sums_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_NBODY_H */
