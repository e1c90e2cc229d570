/* internal.h — what the stages share but users do not see: error recording,
 * the memory cap, progress reporting and threading helpers. */
#ifndef NLE_CORE_INTERNAL_H
#define NLE_CORE_INTERNAL_H

#include "nlembed.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Allocation-failure injection (CHOLMOD's practice), compiled into the
 * sanitizer build (-DNLE_ALLOC_FAULTS): every allocation in src/ goes
 * through these, and after nle__alloc_fail_at(n) the n-th one fails. The
 * tests run a workload for n = 1, 2, ... until it completes, and each run
 * must end in NLE_ERR_NOMEM (or the right result), never a crash or a leak.
 * Elsewhere both calls do nothing and report 0. */
void nle__alloc_fail_at(long n);
long nle__alloc_count(void);
#if defined(NLE_ALLOC_FAULTS) && !defined(NLE__FAULTS_IMPL)
void *nle__fault_malloc(size_t n);
void *nle__fault_calloc(size_t count, size_t size);
void *nle__fault_realloc(void *p, size_t n);
char *nle__fault_strdup(const char *s);
int nle__fault_memalign(void **p, size_t align, size_t n);
#define malloc(n) nle__fault_malloc(n)
#define calloc(c, n) nle__fault_calloc(c, n)
#define realloc(p, n) nle__fault_realloc(p, n)
#define strdup(s) nle__fault_strdup(s)
#define posix_memalign(p, a, n) nle__fault_memalign(p, a, n)
#endif

/* FNV-1a of Y's bytes and shape: a saved model's check that training data
 * given back to it is the data it was trained on. */
uint64_t nle__hash_floats(const nle_matf *Y);
/* A saved model given its training data back: a copy of Y into *dst (the
 * old one freed) when Y has the model's shape n x D and hash, else an
 * error naming both shapes and the model's source. */
nle_status nle__attach_training_data(nle_ctx *ctx, const nle_matf *Y, size_t n, size_t D, uint64_t hash,
                                     const char *source, nle_matf **dst);

/* |a - b|^2 of two float points of d coordinates, accumulated in double:
 * the reference distance of the exact searches. */
static inline double nle__sqdist_fd(const float *a, const float *b, size_t d) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    double t = (double)a[j] - (double)b[j];
    s += t * t;
  }
  return s;
}

/* Labels as classes (src/core/labels.c, nle_labels_encode's rule): whole
 * numbers v[n] within +-limit (NaN, fractions and larger values refused
 * naming `where` and the 0-based row) into codes[n] and the sorted class
 * values (or NULL); strings, sorted by their bytes, into codes and copies
 * of the distinct names. */
nle_status nle__labels_encode_real(nle_ctx *ctx, const char *where, const double *v, size_t n, double limit,
                                   int32_t *codes, int32_t *n_classes, double **values);
nle_status nle__labels_encode_strings(nle_ctx *ctx, char *const *strings, size_t n, int32_t *codes,
                                      int32_t *n_classes, char ***names);

/* names[value] for 0 <= value < count, "auto" for NLE_AUTO when the enum
 * has it, else "unknown"; and back, -1 for an unknown name or NULL
 * (src/core/names.c). NLE__COUNT: the entries of a static array. */
const char *nle__enum_name(const char *const *names, size_t count, bool has_auto, int value);
int nle__enum_parse(const char *const *names, size_t count, bool has_auto, const char *name);
#define NLE__COUNT(a) (sizeof(a) / sizeof *(a))
/* Defines the public pair NAME_FN(type) and PARSE_FN(name) over the names
 * of the enum's list MAP (core.h's XX map), and checks at compile time that
 * the list runs from 0 to COUNT - 1 without a gap: as many rows as COUNT, no
 * index past it, none twice (-Woverride-init, an error under -Werror). */
#define NLE__NAME_ROW(id, value, name) [id] = name,
#define NLE__ONE_ROW(id, value, name) +1
#define NLE__ENUM_NAMES(NAME_FN, PARSE_FN, type, MAP, COUNT, has_auto)                                     \
  static const char *const NAME_FN##_table[] = {MAP(NLE__NAME_ROW)};                                       \
  _Static_assert(NLE__COUNT(NAME_FN##_table) == (COUNT) && (0 MAP(NLE__ONE_ROW)) == (COUNT),              \
                 #MAP " must number its rows 0 to " #COUNT " - 1");                                        \
  const char *NAME_FN(type value) { return nle__enum_name(NAME_FN##_table, COUNT, has_auto, (int)value); } \
  int PARSE_FN(const char *name) { return nle__enum_parse(NAME_FN##_table, COUNT, has_auto, name); }

/* Hot loops compiled for several instruction sets and chosen when the
 * library loads (GCC function multiversioning): the portable build runs
 * them with AVX2 + FMA or AVX-512 where the CPU has them. Only on static
 * functions: a clone set of an external one gets an exported resolver, which
 * -fvisibility=hidden does not hide (tests/install.sh lists exports). A NATIVE=1 build
 * (-march=native, NLE_NATIVE) and other compilers take the one version.
 * Every clone gives the same bits (docs/design.md, "Reproducible"): no
 * `omp simd reduction` in them (its partial sums follow the vector width;
 * sum in NLE__LANES fixed lanes instead), no libmvec call (each instruction
 * set has its own exp and log1p), no complex products for GCC to fuse into
 * vfmaddsub (it does despite -ffp-contract=off). NLE_HOT_ISA=0, 3 or 4 builds
 * them for the one instruction set, x86-64, -v3 or -v4 (`make isa`:
 * tests/isa.sh compares the three). */
#if defined(NLE_HOT_ISA) && NLE_HOT_ISA == 3
#define NLE_HOT __attribute__((target("arch=x86-64-v3")))
#elif defined(NLE_HOT_ISA) && NLE_HOT_ISA == 4
#define NLE_HOT __attribute__((target("arch=x86-64-v4")))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(NLE_NATIVE) && !defined(NLE_HOT_ISA)
#define NLE_HOT __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define NLE_HOT
#endif

/* A sum in hot loops in the same order on every instruction set: element t
 * goes to lane t % NLE__LANES, each lane adds in index order, and the lanes
 * are combined in the fixed order of nle__lanes_total. The lanes' loop
 * vectorises to one AVX-512, two AVX2 or four SSE2 registers of doubles,
 * each lane's additions the same in all three. */
enum { NLE__LANES = 8 };
static inline double nle__lanes_total(const double *lane) {
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}
static inline float nle__lanes_total_f(const float *lane) {
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

#define NLE__ERROR_LEN 1024

struct nle_ctx {
  int threads;          /* 0 = all cores */
  uint64_t seed;
  int verbosity;
  size_t max_memory;    /* 0 = default (80% of physical memory) */
  nle_progress_fn progress;
  void *progress_user;
  nle_log_fn log;
  void *log_user;
  /* The outermost stage in progress (the optimiser's run, a homotopy): the
   * loops inside it report its fraction, so a client sees one bar per
   * stage, not one per evaluation; NULL when none. */
  const char *frame_stage;
  double frame_lo, frame_hi, frame_fraction;
  nle_status last_status;
  char error[NLE__ERROR_LEN];
  nle_option_spelling spelling;
  int warning_count;
  struct nle__warning {
    nle_warning_kind kind;
    char text[512];
  } warnings[NLE_WARNINGS_KEPT];
  /* An open output transaction: completed files (temporary, final path)
   * waiting for nle_outputs_commit. */
  int outputs_open;
  size_t staged_count, staged_cap;
  struct nle__staged_file {
    char *tmp, *final;
  } *staged;
  /* A distributed run's communicator (comm.c): an MPI_Comm of the
   * library's own, NULL when alone; ranks 0 when alone. */
  void *comm;
  int ranks, rank;
  uint64_t bytes_sent;
};

/* Removes the staged temporaries and closes the transaction (ctx.c: also
 * on nle_ctx_free). */
void nle__outputs_discard(nle_ctx *ctx);

/* Records status and a printf-style message in the context and returns the
 * status, so error paths read `return nle__fail(ctx, NLE_ERR_ARG, "...")`. */
nle_status nle__fail(nle_ctx *ctx, nle_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void nle__clear_error(nle_ctx *ctx);
/* Records a warning (see nle_ctx_warning) and logs it at level 0 as
 * "warning: ...". Options in the text as markers, {@name} or {@name=value}. */
void nle__warn(nle_ctx *ctx, nle_warning_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* in, with its option markers rendered in the given spelling, into out[cap]. */
void nle__spell_options(const char *in, nle_option_spelling spelling, char *out, size_t cap);
/* Puts "prefix: " (e.g. a file name) in front of the recorded error text and
 * returns the recorded status. */
/* in, with control bytes and broken UTF-8 shown as \xNN, into out[cap] */
void nle__printable(const char *in, char *out, size_t cap);
/* An option's value as a message shows it: "auto" for NLE_AUTO (never the
 * sentinel's number), else the number ("%d", "%g"). Use the member s in
 * the printf call: nle__int_text(o->dims).s */
typedef struct {
  char s[32];
} nle__value_text;
nle__value_text nle__int_text(int v);
nle__value_text nle__real_text(double v);
nle_status nle__fail_prefix(nle_ctx *ctx, const char *prefix);
/* The same unless the text already starts with "name:" (an error found while
 * reading a file, which may or may not have named it). */
nle_status nle__name_error(nle_ctx *ctx, const char *name);
/* The same with a suffix (" (hint)") after the text. */
nle_status nle__fail_suffix(nle_ctx *ctx, const char *suffix);

/* Sends a log line when level <= verbosity. */
void nle__log(nle_ctx *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The effective memory cap in bytes. */
size_t nle__memory_cap(const nle_ctx *ctx);
/* NLE_OK when a request of `bytes` for `what` fits the cap; otherwise
 * NLE_ERR_MEMCAP with a message naming the request and the cap. */
nle_status nle__check_memory(nle_ctx *ctx, double bytes, const char *what);
/* malloc/calloc that record NLE_ERR_NOMEM in ctx on failure (ctx may be NULL). */
void *nle__malloc(nle_ctx *ctx, size_t bytes, const char *what);
void *nle__calloc(nle_ctx *ctx, size_t count, size_t size, const char *what);
/* A large buffer aligned to 2 MiB and asked for transparent huge pages
 * (from 2 MiB; below, 64-byte aligned): an N x N matrix or an FFT grid
 * then takes one page fault per 2 MiB instead of per 4 KiB, which in a
 * virtual machine costs as much as filling it. Freed by free(); NULL when
 * out of memory (nothing recorded). */
void *nle__malloc_huge(size_t bytes);

/* Progress: returns NLE_ERR_CANCELLED (recorded) when the callback asks to
 * stop. Inside a frame the fraction maps into the frame's range and the
 * callback sees the frame's stage. */
nle_status nle__progress(nle_ctx *ctx, const char *stage, double fraction);
/* Opens a frame for `stage` unless one is open; returns whether this call
 * opened it (pass that to nle__stage_end). */
bool nle__stage_begin(nle_ctx *ctx, const char *stage);
void nle__stage_end(nle_ctx *ctx, bool opened);
/* The frame's part [lo, hi] that inner fractions map into (the owner's
 * business, e.g. one step of a homotopy). */
void nle__stage_range(nle_ctx *ctx, double lo, double hi);
/* The cancellation check of an inner loop: reports the frame's fraction
 * unchanged inside a frame, else (stage, fraction). */
nle_status nle__progress_inner(nle_ctx *ctx, const char *stage, double fraction);
/* The same report without recording anything (for a parallel loop's
 * thread): non-zero when the callback asks to stop. */
int nle__progress_check(const nle_ctx *ctx, const char *stage, double fraction);

/* Threads actually used by a kernel of `work` items: 1 for small problems. */
int nle__threads_for(const nle_ctx *ctx, double work);
/* Runs fn(job, b, scratch) for every block b in [0, nblocks) on `threads`
 * OpenMP threads (dynamic schedule), each thread with scratch_bytes of its own
 * scratch. Progress is reported as the fraction of blocks done; a non-zero
 * return from fn (which should record its error) or a cancellation stops the
 * loop. BLAS runs single-threaded inside. */
typedef int (*nle__block_fn)(void *job, size_t block, void *scratch);
nle_status nle__for_blocks(nle_ctx *ctx, const char *stage, size_t nblocks, int threads, size_t scratch_bytes,
                           nle__block_fn fn, void *job);

/* BLAS threading: kernels running their own OpenMP loops call BLAS serially. */
int nle__blas_set_threads(int threads); /* returns the previous setting */

/* A key with an index, ordered by key and then by index (as a stable sort
 * of the indices would order them): for sorts and bounded heaps. */
typedef struct {
  double d;
  int64_t i;
} nle__pair;

static inline int nle__pair_greater(nle__pair a, nle__pair b) {
  return a.d > b.d || (a.d == b.d && a.i > b.i);
}

static inline int nle__pair_cmp(const void *a, const void *b) {
  nle__pair x = *(const nle__pair *)a, y = *(const nle__pair *)b;
  return nle__pair_greater(x, y) - nle__pair_greater(y, x);
}

/* Defines `static void NAME(TYPE *a, size_t n)`: a in increasing order by
 * GREATER(x, y), a strict total order (so any correct sort gives the same
 * array), by heapsort with the comparison inlined. For the rows of kNN
 * graphs, sorted by the million: glibc's qsort calls its comparison
 * through a pointer, and its merge sort copies. */
#define NLE__DEFINE_SORT(NAME, TYPE, GREATER)                                                               \
  static void NAME##_sift(TYPE *a, size_t top, size_t n) {                                                  \
    TYPE x = a[top];                                                                                        \
    for (size_t c = 2 * top + 1; c < n; c = 2 * top + 1) {                                                  \
      if (c + 1 < n && GREATER(a[c + 1], a[c])) c++;                                                        \
      if (!GREATER(a[c], x)) break;                                                                         \
      a[top] = a[c];                                                                                        \
      top = c;                                                                                              \
    }                                                                                                       \
    a[top] = x;                                                                                             \
  }                                                                                                         \
  static void NAME(TYPE *a, size_t n) {                                                                     \
    for (size_t top = n / 2; top-- > 0;) NAME##_sift(a, top, n);                                            \
    for (size_t end = n; end > 1; end--) {                                                                  \
      TYPE t = a[0];                                                                                        \
      a[0] = a[end - 1];                                                                                    \
      a[end - 1] = t;                                                                                       \
      NAME##_sift(a, 0, end - 1);                                                                           \
    }                                                                                                       \
  }

/* Defines `NAME(TYPE *h, int n, TYPE x)`: x replaces the root of the full
 * max-heap h[0..n) (by GREATER, a strict total order) and sinks to its
 * place. The bounded heaps of the k nearest offer a candidate with it when
 * it beats the root. Always inlined: the exact search calls it millions of
 * times a second. */
#define NLE__DEFINE_HEAP_REPLACE(NAME, TYPE, GREATER)                                                       \
  static inline __attribute__((always_inline)) void NAME(TYPE *h, int n, TYPE x) {                          \
    int p = 0;                                                                                              \
    for (;;) {                                                                                              \
      int l = 2 * p + 1, r = l + 1, m = p;                                                                  \
      TYPE best = x;                                                                                        \
      if (l < n && GREATER(h[l], best)) {                                                                   \
        m = l;                                                                                              \
        best = h[l];                                                                                        \
      }                                                                                                     \
      if (r < n && GREATER(h[r], best)) m = r;                                                              \
      if (m == p) break;                                                                                    \
      h[p] = h[m];                                                                                          \
      p = m;                                                                                                \
    }                                                                                                       \
    h[p] = x;                                                                                               \
  }

/* Offers x to the bounded max-heap h[0..*len) of at most cap entries: the
 * cap smallest pairs seen so far, the largest at h[0]. */
static inline void nle__pair_heap_offer(nle__pair *h, size_t *len, size_t cap, nle__pair x) {
  size_t c;
  if (*len < cap) { /* room: sift up */
    for (c = (*len)++; c > 0 && nle__pair_greater(x, h[(c - 1) / 2]); c = (c - 1) / 2) h[c] = h[(c - 1) / 2];
    h[c] = x;
    return;
  }
  if (!nle__pair_greater(h[0], x)) return;
  for (c = 0;;) { /* replace the largest, sift down */
    size_t l = 2 * c + 1, big = c;
    nle__pair bv = x;
    if (l < cap && nle__pair_greater(h[l], bv)) big = l, bv = h[l];
    if (l + 1 < cap && nle__pair_greater(h[l + 1], bv)) big = l + 1;
    if (big == c) break;
    h[c] = h[big];
    c = big;
  }
  h[c] = x;
}

/* A locality order of the points of square W: reverse Cuthill-McKee over the
 * pattern of W + W^T, component by component, each from a pseudo-peripheral
 * point. order[i] is the point placed at position i; neighbours in W end up
 * at nearby positions, so sweeps over W's rows read nearby memory. Wt: W's
 * transpose where the caller has it (W itself when symmetric), else NULL. */
nle_status nle__csr_locality_order(nle_ctx *ctx, const nle_csr *W, const nle_csr *Wt, int32_t **order);
/* Connected components of the graph of a symmetric W (its positive
 * entries); -1 when out of memory. */
int64_t nle__csr_components(nle_ctx *ctx, const nle_csr *W);
/* W with rows and columns renumbered: out(i, j) = W(order[i], order[j]), each
 * row's entries in W's order, its values stored as `dtype` (double to float
 * rounds to nearest). The matrix must be square. */
nle_status nle__csr_permute(nle_ctx *ctx, const nle_csr *W, const int32_t *order, nle_dtype dtype, nle_csr **out);

/* Human-readable byte counts ("1.5 GiB") into buf. */
const char *nle__format_bytes(double bytes, char *buf, size_t len);

/* Checked size arithmetic: false on overflow. */
static inline bool nle__mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

#endif
