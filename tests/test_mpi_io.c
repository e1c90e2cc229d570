/* test_mpi_io.c — reading and writing by rows and the estimator's front door
 * under a communicator (src/io/rows.c, src/estimator/est_rows.c,
 * nle__comm_rebalance; docs/mpi.md). Alone each case checks the one-rank
 * path; under mpirun (tests/mpi.sh) every rank compares what it got with
 * its rows of the same work done alone (test_ctx), bit for bit. Files go
 * in rank 0's temporary folder (all ranks run on this machine). */
#include "harness.h"
#include "../src/core/comm.h"
#include "../src/estimator/estimator_internal.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Three blocks of rows and a short fourth: every rank of 2 or 3 holds some. */
enum { N_ROWS = 3 * NLE__RANK_ROW_BLOCK + 50 };

/* A path in rank 0's temporary folder, the same on every rank. */
static const char *shared_path(nle_ctx *ctx, const char *name) {
  static char buf[16][512];
  static int slot;
  slot = (slot + 1) % 16;
  snprintf(buf[slot], sizeof buf[slot], "%s", test_path(name));
  nle_test_ok(nle__comm_bcast(ctx, buf[slot], sizeof buf[slot], 0));
  return buf[slot];
}

static nle__row_range my_share(nle_ctx *ctx, size_t n) { return nle__rank_rows(n, nle_ctx_ranks(ctx), nle_ctx_rank(ctx)); }

/* Rows given in another split, every rank's rows in rank order: the
 * canonical shares come out; back to the split with `want`; rank 0 holding
 * all is a scatter; a canonical split moves nothing. */
static void rebalance_rows(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  uint64_t *all = malloc(2 * N_ROWS * sizeof *all);
  for (size_t i = 0; i < 2 * N_ROWS; i++) all[i] = i * 2654435761u;
  nle__row_range share = my_share(ctx, N_ROWS);
  for (int holder = 0; holder < 2; holder++) { /* every row on the last rank, then on rank 0 */
    int who = holder ? 0 : ranks - 1;
    size_t held = me == who ? N_ROWS : 0;
    void *out = NULL;
    nle__rows rows;
    nle_test_ok(nle__comm_rebalance(ctx, me == who ? all : NULL, held, 2 * sizeof *all, NLE__CANONICAL, &out, &rows));
    nle_test(rows.n == N_ROWS && rows.mine.begin == share.begin && rows.mine.end == share.end);
    const void *got = out ? out : all; /* alone nothing moves */
    nle_test((ranks == 1) == (out == NULL));
    nle_test(memcmp(got, all + 2 * share.begin, (share.end - share.begin) * 2 * sizeof *all) == 0);
    /* and back where they were */
    void *back = NULL;
    nle_test_ok(nle__comm_rebalance(ctx, got, share.end - share.begin, 2 * sizeof *all, held, &back, &rows));
    nle_test(rows.mine.end - rows.mine.begin == held);
    if (held) nle_test(memcmp(back ? back : got, all, N_ROWS * 2 * sizeof *all) == 0);
    free(back);
    free(out);
  }
  void *none = NULL;
  nle__rows rows;
  nle_test_ok(nle__comm_rebalance(ctx, all + 2 * share.begin, share.end - share.begin, 2 * sizeof *all, NLE__CANONICAL,
                                  &none, &rows));
  nle_test(none == NULL && rows.n == N_ROWS);
  free(all);
  nle_ctx_free(&ctx);
}

/* A Fortran-order N x D float64 .npy of X's values. */
static void write_fortran_npy(const char *path, const nle_matd *X) {
  char dict[160], header[256];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': True, 'shape': (%zu, %zu), }", X->rows,
                   X->cols);
  size_t pad = (64 - (10 + (size_t)n + 1) % 64) % 64, hlen = (size_t)n + pad + 1;
  memcpy(header, "\x93NUMPY\x01\x00", 8);
  header[8] = (char)(hlen & 0xff), header[9] = (char)(hlen >> 8);
  memcpy(header + 10, dict, (size_t)n);
  memset(header + 10 + n, ' ', pad);
  header[10 + hlen - 1] = '\n';
  FILE *f = fopen(path, "wb");
  fwrite(header, 1, 10 + hlen, f);
  for (size_t j = 0; j < X->cols; j++)
    for (size_t i = 0; i < X->rows; i++) fwrite(&X->data[i * X->cols + j], sizeof(double), 1, f);
  fclose(f);
}

/* Rank 0 writes the inputs alone: a C-order float32 .npy, a Fortran-order
 * float64 one, a CSV with a named label column, a one-column labels file. */
static void write_inputs(nle_ctx *ctx, const char *npy, const char *fortran, const char *csv, const char *labels) {
  if (nle_ctx_rank(ctx) == 0) {
    nle_ctx *one = test_ctx(1);
    nle_matd *X = test_random_matd(N_ROWS, 3, 1.0, 7);
    nle_matf *Xf = NULL;
    nle_test_ok(nle_matd_to_matf(one, X, &Xf));
    nle_test_ok(nle_write_matf(one, npy, Xf));
    write_fortran_npy(fortran, X);
    FILE *f = fopen(csv, "w"), *l = fopen(labels, "w");
    fprintf(f, "a,b,label\n");
    for (size_t i = 0; i < N_ROWS; i++) {
      fprintf(f, "%.6g,%.6g,class%zu\n", X->data[3 * i], X->data[3 * i + 1], (i * 7) % 5);
      fprintf(l, "%zu\n", (i * 3) % 4);
    }
    fclose(f);
    fclose(l);
    nle_matd_free(&X);
    nle_matf_free(&Xf);
    nle_ctx_free(&one);
  }
  nle_test_ok(nle__comm_barrier(ctx));
}

/* An HDF5 file holding the N x 3 float64 dataset "group/X" (rank 0 writes
 * it alone). */
static void write_h5(nle_ctx *ctx, const char *path) {
  if (nle_ctx_rank(ctx) == 0) {
    nle_matd *X = test_random_matd(N_ROWS, 3, 1.0, 8);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {N_ROWS, 3};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(g, "X", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    nle_test(d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, X->data) >= 0);
    H5Dclose(d), H5Sclose(sp), H5Gclose(g), H5Fclose(f);
    nle_matd_free(&X);
  }
  nle_test_ok(nle__comm_barrier(ctx));
}

/* A sparse n x 40 Matrix Market file (rows of 0 to 3 entries), rank 0's. */
static void write_mtx(nle_ctx *ctx, const char *path, size_t n) {
  if (nle_ctx_rank(ctx) == 0) {
    FILE *f = fopen(path, "w");
    size_t nnz = 0;
    for (size_t i = 0; i < n; i++) nnz += i % 4;
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%zu 40 %zu\n", n, nnz);
    for (size_t i = 0; i < n; i++)
      for (size_t k = 0; k < i % 4; k++) fprintf(f, "%zu %zu %.3f\n", i + 1, (i * 7 + k * 11) % 40 + 1, 0.5 + (double)k);
    fclose(f);
  }
  nle_test_ok(nle__comm_barrier(ctx));
}

/* This rank's rows of sparse rows read under the communicator are its rows
 * of the whole read alone. */
static void check_sparse_rows(const nle_csr *mine, const nle_csr *whole, nle__row_range share) {
  nle_test(mine->rows == (int64_t)(share.end - share.begin) && mine->cols == whole->cols && mine->dtype == whole->dtype);
  int64_t first = whole->rowptr[share.begin];
  for (int64_t i = 0; i <= mine->rows; i++) nle_test(mine->rowptr[i] == whole->rowptr[share.begin + (size_t)i] - first);
  size_t nnz = (size_t)mine->rowptr[mine->rows], value = whole->dtype == NLE_F32 ? 4 : 8;
  nle_test(memcmp(mine->colind, whole->colind + first, nnz * sizeof(int32_t)) == 0);
  nle_test(memcmp(mine->val, (const char *)whole->val + (size_t)first * value, nnz * value) == 0);
}

/* This rank's rows of a source read under the communicator are its rows of
 * the whole read alone: values (dense or sparse), labels, class names. */
static void check_read(nle_ctx *ctx, const char *source, bool sparse_ok) {
  nle_ctx *one = test_ctx(1);
  nle_read_opts o;
  nle_read_opts_init(&o);
  o.sparse_ok = sparse_ok;
  nle_dataset *whole = NULL, *mine = NULL;
  nle_test_ok(nle_dataset_read(one, source, &o, &whole));
  nle_test_ok(nle_dataset_read(ctx, source, &o, &mine));
  nle_test(!strcmp(mine->name, whole->name));
  if (whole->sparse) {
    nle_test(mine->sparse != NULL && mine->X == NULL);
    if (mine->sparse) check_sparse_rows(mine->sparse, whole->sparse, my_share(ctx, (size_t)whole->sparse->rows));
    nle_dataset_free(&whole);
    nle_dataset_free(&mine);
    nle_ctx_free(&one);
    return;
  }
  nle__row_range share = my_share(ctx, whole->X->rows);
  size_t cols = whole->X->cols;
  nle_test(mine->X->rows == share.end - share.begin && mine->X->cols == cols);
  nle_test(memcmp(mine->X->data, whole->X->data + share.begin * cols, mine->X->rows * cols * sizeof(float)) == 0);
  nle_test((mine->labels == NULL) == (whole->labels == NULL));
  if (whole->labels) {
    nle_test(memcmp(mine->labels, whole->labels + share.begin, mine->X->rows * sizeof(int32_t)) == 0);
    nle_test(mine->n_classes == whole->n_classes);
    for (int32_t c = 0; c < whole->n_classes && mine->class_names; c++)
      nle_test(!strcmp(mine->class_names[c], whole->class_names[c]));
  }
  nle_dataset_free(&whole);
  nle_dataset_free(&mine);
  nle_ctx_free(&one);
}

static void read_rows(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  const char *npy = shared_path(ctx, "rows.npy"), *fortran = shared_path(ctx, "rows_f.npy");
  const char *csv = shared_path(ctx, "rows.csv"), *labels = shared_path(ctx, "labels.txt");
  write_inputs(ctx, npy, fortran, csv, labels);
  check_read(ctx, npy, false);
  check_read(ctx, fortran, false);
  check_read(ctx, csv, false);
  const char *h5 = shared_path(ctx, "rows.h5"), *mtx = shared_path(ctx, "rows.mtx");
  write_h5(ctx, h5);
  check_read(ctx, h5, false); /* the only 2-D array, by hyperslab */
  char named[600];
  snprintf(named, sizeof named, "%s:group/X", h5);
  check_read(ctx, named, false);
  write_mtx(ctx, mtx, N_ROWS);
  check_read(ctx, mtx, true); /* sparse rows scattered by rank 0 */
  check_read(ctx, mtx, false); /* densified */
  /* fewer rows than a block: rank 0 holds them all, the others none */
  const char *small = shared_path(ctx, "small.mtx"), *small_csv = shared_path(ctx, "small.csv");
  write_mtx(ctx, small, 100);
  check_read(ctx, small, true);
  check_read(ctx, small, false);
  if (nle_ctx_rank(ctx) == 0) {
    FILE *f = fopen(small_csv, "w");
    fprintf(f, "a,b,label\n");
    for (int i = 0; i < 100; i++) fprintf(f, "%d,%d,c%d\n", i, 2 * i, i % 3);
    fclose(f);
  }
  nle_test_ok(nle__comm_barrier(ctx));
  check_read(ctx, small_csv, false);
  /* a graph (--affinities, --knn): each rank its rows */
  nle_ctx *alone = test_ctx(1);
  nle_csr *graph = NULL, *graph_rows = NULL;
  nle_test_ok(nle_read_csr_mtx(alone, mtx, &graph));
  nle_test_ok(nle_read_csr_mtx(ctx, mtx, &graph_rows));
  if (graph && graph_rows) check_sparse_rows(graph_rows, graph, my_share(ctx, (size_t)graph->rows));
  nle_csr_free(&graph);
  nle_csr_free(&graph_rows);
  nle_ctx_free(&alone);
  /* --labels: each rank's count in, its rows' labels out */
  nle__row_range share = my_share(ctx, N_ROWS);
  int32_t *all = NULL, *mine = NULL, classes_all, classes_mine;
  int64_t n_all, n_mine;
  nle_ctx *one = test_ctx(1);
  nle_test_ok(nle_labels_read(one, labels, NULL, N_ROWS, &all, &n_all, &classes_all, NULL));
  nle_test_ok(nle_labels_read(ctx, labels, NULL, (int64_t)(share.end - share.begin), &mine, &n_mine, &classes_mine, NULL));
  nle_test(n_mine == (int64_t)(share.end - share.begin) && classes_mine == classes_all);
  nle_test(memcmp(mine, all + share.begin, (size_t)n_mine * sizeof *mine) == 0);
  free(all);
  free(mine);
  nle_ctx_free(&one);
  nle_ctx_free(&ctx);
}

/* A NaN in the last rank's rows: every rank fails, the message naming the
 * file, the row (in the whole file) and the column, as alone. */
static void bad_value_names_row(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  const char *path = shared_path(ctx, "nan.npy");
  size_t bad_row = N_ROWS - 3;
  if (nle_ctx_rank(ctx) == 0) {
    nle_ctx *one = test_ctx(1);
    nle_matd *X = test_random_matd(N_ROWS, 2, 1.0, 3);
    X->data[bad_row * 2 + 1] = NAN;
    nle_test_ok(nle_write_matd(one, path, X));
    nle_matd_free(&X);
    nle_ctx_free(&one);
  }
  nle_test_ok(nle__comm_barrier(ctx));
  nle_dataset *ds = NULL;
  char want[64];
  snprintf(want, sizeof want, "(row %zu, column 1): NaN value", bad_row);
  nle_test(nle_dataset_read(ctx, path, NULL, &ds) == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), want) != NULL && strstr(nle_ctx_error(ctx), "nan.npy") != NULL);
  nle_test(ds == NULL);
  nle_ctx_free(&ctx);
}

static bool same_files(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  for (int ca = 0, cb = 0; same && ca != EOF; same = ca == cb) ca = fgetc(fa), cb = fgetc(fb);
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* Each rank's rows into one file (a .npy by offset, a .csv gathered),
 * through the transaction: nothing before the commit, then the bytes a
 * single process writes. Mismatched columns: every rank fails, no file. */
static void write_rows(void) {
  nle_ctx *ctx = test_comm_ctx(1), *one = test_ctx(1);
  int me = nle_ctx_rank(ctx);
  nle_matd *X = test_random_matd(N_ROWS, 2, 1.0, 5);
  nle__row_range share = my_share(ctx, N_ROWS);
  nle_matd rows = {share.end - share.begin, 2, X->data + share.begin * 2};
  int32_t *labels = malloc(N_ROWS * sizeof *labels);
  for (size_t i = 0; i < N_ROWS; i++) labels[i] = (int32_t)(i % 9) - 2;
  const char *names[] = {"out.npy", "out.csv", "labels.npy"};
  for (int k = 0; k < 3; k++) {
    char alone_name[32];
    snprintf(alone_name, sizeof alone_name, "alone_%s", names[k]);
    const char *path = shared_path(ctx, names[k]), *alone = shared_path(ctx, alone_name);
    nle_test_ok(nle_outputs_begin(ctx));
    nle_test_ok(k < 2 ? nle_write_matd(ctx, path, &rows)
                      : nle_write_labels(ctx, path, labels + share.begin, (int64_t)(share.end - share.begin)));
    struct stat st;
    if (me == 0) nle_test(stat(path, &st) != 0); /* staged, not in place */
    nle_test_ok(nle_outputs_commit(ctx));
    if (me == 0) {
      nle_test_ok(k < 2 ? nle_write_matd(one, alone, X) : nle_write_labels(one, alone, labels, N_ROWS));
      nle_test(same_files(path, alone));
    }
    nle_test_ok(nle__comm_barrier(ctx));
  }
  if (nle_ctx_ranks(ctx) > 1) {
    const char *path = shared_path(ctx, "mismatch.npy");
    nle_matd wrong = {rows.rows, me == 1 ? 1 : 2, rows.data};
    nle_test(nle_write_matd(ctx, path, &wrong) == NLE_ERR_ARG);
    struct stat st;
    nle_test(stat(path, &st) != 0);
  }
  free(labels);
  nle_matd_free(&X);
  nle_ctx_free(&one);
  nle_ctx_free(&ctx);
}

/* The front door: a method not distributed is refused on more than one
 * rank (alone it fits); rows given in another split reach the stages as
 * the canonical shares and the embedding goes back to the split given. */
static void estimator_front_door(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  nle_matf *Y = test_random_matf(N_ROWS, 4, 11);
  nle_estimator *e = NULL;
  const char *method = NULL;
  for (int m = 0; !method && nle_estimator_method_name(m); m++) {
    nle_test_ok(nle_estimator_new(ctx, nle_estimator_method_name(m), &e));
    if (!nle_estimator_runs_distributed(e) && !nle_estimator_needs_labels(e)) method = nle_estimator_method_name(m);
    else nle_estimator_free(&e);
  }
  nle_test(method != NULL);
  if (ranks > 1 && e) {
    nle__row_range share = my_share(ctx, N_ROWS);
    nle_matf rows = {share.end - share.begin, 4, Y->data + share.begin * 4};
    nle_estimator_input in = {.Y = &rows};
    nle_test(nle_estimator_fit(e, &in) == NLE_ERR_UNSUPPORTED);
    nle_test(strstr(nle_ctx_error(ctx), "does not run on more than one rank yet") != NULL);
  }
  nle_estimator_free(&e);
  /* a family flagged distributed (a copy of PCA's row) sees the canonical
   * shares of rows given all on the last rank */
  nle_test_ok(nle_estimator_new(ctx, "pca", &e));
  nle__family flagged = *e->family;
  const nle__family *real = e->family;
  flagged.distributed = ~0u;
  e->family = &flagged;
  int32_t *labels = malloc(N_ROWS * sizeof *labels);
  for (size_t i = 0; i < N_ROWS; i++) labels[i] = (int32_t)(i % 3);
  bool holder = me == ranks - 1;
  nle_matf given = {holder ? N_ROWS : 0, 4, holder ? Y->data : NULL};
  nle_estimator_input in = {.Y = &given, .labels = holder ? labels : NULL}, use;
  nle__est_moved moved;
  size_t n = 0;
  nle_test_ok(nle__est_rows_in(e, &in, &use, &moved, &n));
  nle__row_range share = my_share(ctx, N_ROWS);
  nle_test(n == N_ROWS && use.Y->rows == share.end - share.begin);
  nle_test(memcmp(use.Y->data, Y->data + share.begin * 4, use.Y->rows * 4 * sizeof(float)) == 0);
  if (use.labels) nle_test(memcmp(use.labels, labels + share.begin, use.Y->rows * sizeof *labels) == 0);
  /* an "embedding" of the canonical rows (their first two columns) goes
   * back to the rank that gave them */
  nle_test_ok(nle_matd_alloc(ctx, use.Y->rows, 2, &e->X));
  for (size_t i = 0; i < use.Y->rows * 2; i++) e->X->data[i] = use.Y->data[(i / 2) * 4 + i % 2];
  nle_test_ok(nle__est_rows_out(e, &moved));
  nle_test(e->X->rows == given.rows);
  for (size_t i = 0; i < given.rows * 2; i++) nle_test(e->X->data[i] == Y->data[(i / 2) * 4 + i % 2]);
  nle__est_moved_free(&moved);
  e->family = real;
  free(labels);
  nle_estimator_free(&e);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* A model's map of new points, row by row: each rank maps its rows (any
 * split) to the bits a single process gives them where the model's maps
 * say so (PCA), and the others (landmark MDS, kernel PCA, LDA) are refused
 * on more than one rank; fitted alone on 600 rows, the model loaded by
 * every rank. */
static void transform_by_rows(void) {
  nle_ctx *ctx = test_comm_ctx(1), *one = test_ctx(1);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  nle_matf *Y = test_random_matf(N_ROWS, 6, 13);
  nle_matf train = {600, 6, Y->data};
  int32_t *labels = malloc(600 * sizeof *labels);
  for (int i = 0; i < 600; i++) labels[i] = i % 3;
  const char *methods[] = {"pca", "lmds", "kpca", "lda"};
  for (int m = 0; m < 4; m++) {
    const char *model = shared_path(ctx, "model.nle");
    nle_estimator *alone = NULL, *loaded = NULL;
    nle_test_ok(nle_estimator_new(one, methods[m], &alone));
    nle_estimator_input in = {.Y = &train, .labels = labels};
    nle_test_ok(nle_estimator_fit(alone, &in));
    nle_matd *X = NULL, *mine = NULL;
    nle_test_ok(nle_estimator_transform(alone, Y, &X));
    if (me == 0) nle_test_ok(nle_estimator_save(alone, model));
    nle_test_ok(nle__comm_barrier(ctx));
    nle_test_ok(nle_estimator_load(ctx, model, &loaded));
    nle_test((m == 0) == nle_estimator_maps_distributed(loaded)); /* PCA's alone, for now */
    size_t begin = N_ROWS * (size_t)me / (size_t)ranks / 3, end = N_ROWS * (size_t)(me + 1) / (size_t)ranks / 3;
    if (me == ranks - 1) end = N_ROWS; /* an uneven split */
    nle_matf rows = {end - begin, 6, Y->data + begin * 6};
    if (ranks > 1 && !nle_estimator_maps_distributed(loaded)) {
      nle_test(nle_estimator_transform(loaded, &rows, &mine) == NLE_ERR_UNSUPPORTED);
      nle_test(strstr(nle_ctx_error(ctx), "does not run on more than one rank yet") != NULL);
    } else {
      nle_test_ok(nle_estimator_transform(loaded, &rows, &mine));
      size_t d = X->cols;
      nle_test(mine && mine->rows == end - begin &&
               memcmp(mine->data, X->data + begin * d, mine->rows * d * sizeof(double)) == 0);
    }
    nle_test_ok(nle__comm_barrier(ctx)); /* the model file is rewritten by the next method */
    nle_matd_free(&X);
    nle_matd_free(&mine);
    nle_estimator_free(&alone);
    nle_estimator_free(&loaded);
  }
  free(labels);
  nle_matf_free(&Y);
  nle_ctx_free(&one);
  nle_ctx_free(&ctx);
}

const nle_test_case mpi_io_tests[] = {{"comm/rebalance_rows", rebalance_rows},
                                      {"mpi/read_rows", read_rows},
                                      {"mpi/bad_value_names_row", bad_value_names_row},
                                      {"mpi/write_rows", write_rows},
                                      {"mpi/estimator_front_door", estimator_front_door},
                                      {"mpi/transform_by_rows", transform_by_rows},
                                      {NULL, NULL}};
