/* rows.c — reading and writing by rows under a communicator (issue 38,
 * docs/mpi.md). A distributed run's readers give each rank its canonical
 * rows (nle__rank_rows) and its writers take each rank's rows:
 *
 * - a .npy is read by offset: every rank parses the header and reads its
 *   own rows, so no rank holds all N x D; an HDF5/.h5ad dense array by a
 *   hyperslab of its rows;
 * - a source that cannot be read by rows (text, .mat, .npz, HDF5 sparse
 *   groups, gzip'ed, a built-in dataset) is read whole by rank 0 alone, and its rows, labels
 *   and class names are sent out (one personalised exchange): the other
 *   ranks never hold more than their share, rank 0 holds the whole matrix
 *   while reading it (docs/mpi.md says to convert a large input to .npy);
 * - a .npy is written by offset into one file staged by rank 0, put in
 *   place only when every rank wrote its rows; other outputs (text, Matrix
 *   Market) are gathered to rank 0, which writes them.
 *
 * Every failure is agreed (nle__comm_agree): all ranks return the same
 * error, the message of the lowest rank that failed (a bad value names its
 * row in the whole file, as a single process would). */
#include "io_internal.h"
#include "../core/comm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The ranks were given the same source, reading options and file size. */
static nle_status same_input(nle_ctx *ctx, const char *source, const nle_read_opts *opts) {
  struct stat st;
  int64_t fields[6] = {opts ? opts->delimiter : 0, opts ? opts->header : 0, opts ? opts->label_column : 0,
                       opts ? opts->transpose : 0, opts ? opts->sparse_ok : 0,
                       stat(source, &st) == 0 ? (int64_t)st.st_size : -1};
  size_t len = strlen(source);
  char *bytes = malloc(sizeof fields + len);
  if (!bytes) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  memcpy(bytes, fields, sizeof fields);
  memcpy(bytes + sizeof fields, source, len);
  nle_status s = nle__comm_same(ctx, bytes, sizeof fields + len, "inputs (another file, file size or reading options)");
  free(bytes);
  if (s) nle__fail(ctx, s, "%s: the ranks were given different inputs (another file, file size or reading options)",
                   source);
  return s;
}

/* --- metadata every rank needs: the name, the class names ----------------- */

/* name\0class0\0class1\0... */
static char *pack_names(const nle_dataset *ds, size_t *len) {
  size_t n = strlen(ds->name ? ds->name : "") + 1;
  for (int32_t c = 0; ds->class_names && c < ds->n_classes; c++) n += strlen(ds->class_names[c] ? ds->class_names[c] : "") + 1;
  char *buf = malloc(n), *p = buf;
  if (!buf) return NULL;
  p = stpcpy(p, ds->name ? ds->name : "") + 1;
  for (int32_t c = 0; ds->class_names && c < ds->n_classes; c++) p = stpcpy(p, ds->class_names[c] ? ds->class_names[c] : "") + 1;
  *len = n;
  return buf;
}

static nle_status unpack_names(nle_ctx *ctx, const char *buf, bool has_names, nle_dataset *ds) {
  nle_status s = nle__dataset_rename(ctx, ds, buf);
  const char *p = buf + strlen(buf) + 1;
  if (s || !has_names || ds->n_classes <= 0) return s;
  ds->class_names = calloc((size_t)ds->n_classes, sizeof *ds->class_names);
  for (int32_t c = 0; ds->class_names && c < ds->n_classes; c++, p += strlen(p) + 1)
    if (!(ds->class_names[c] = strdup(p))) break;
  if (!ds->class_names || !ds->class_names[ds->n_classes - 1]) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  return NLE_OK;
}

/* What rank 0 read, as every rank learns it before its rows arrive. */
typedef struct {
  uint64_t n, cols, nnz, names_len;
  int32_t sparse, dtype, has_labels, n_classes, has_names, pad;
} shape_msg;

/* Rank 0's n_held rows (held; none elsewhere) shared out in the canonical
 * shares, *mine always this rank's own copy (when rank 0's share is every
 * row, nothing moves and rank 0 copies them); agreed. */
static nle_status scatter_rows(nle_ctx *ctx, const void *held, size_t n_held, size_t row_bytes, void **mine,
                               nle__rows *rows) {
  nle_status s = nle__comm_rebalance(ctx, held, n_held, row_bytes, NLE__CANONICAL, mine, rows);
  if (!s && !*mine) { /* in place: this rank's rows are the ones it held */
    size_t bytes = n_held * row_bytes;
    if (!(*mine = malloc(bytes ? bytes : 1))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
    else if (bytes) memcpy(*mine, held, bytes);
  }
  return nle__comm_agree(ctx, s);
}

/* A sparse matrix's rows [b, e) of rank 0's all (NULL elsewhere) to every
 * rank: each row's length, then its columns and values. */
static nle_status scatter_csr(nle_ctx *ctx, const nle_csr *all, const shape_msg *m, nle__rows *rows, nle_csr **out) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  size_t n_local = me == 0 ? (size_t)m->n : 0;
  int64_t *lengths = me == 0 ? malloc((n_local ? n_local : 1) * sizeof *lengths) : NULL;
  if (me == 0 && !lengths) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n_local; i++) lengths[i] = all->rowptr[i + 1] - all->rowptr[i];
  void *mine_lengths = NULL;
  nle_status s = scatter_rows(ctx, lengths, n_local, sizeof *lengths, &mine_lengths, rows);
  free(lengths);
  size_t count = s ? 0 : rows->mine.end - rows->mine.begin, nnz = 0;
  const int64_t *got = mine_lengths;
  for (size_t i = 0; i < count; i++) nnz += (size_t)got[i];
  size_t value = m->dtype == NLE_F32 ? sizeof(float) : sizeof(double);
  if (!s) s = nle_csr_alloc(ctx, (int64_t)count, (int64_t)m->cols, (int64_t)nnz, (nle_dtype)m->dtype, out);
  for (size_t i = 0; !s && i < count; i++) (*out)->rowptr[i + 1] = (*out)->rowptr[i] + got[i];
  free(mine_lengths);
  /* columns, then values: rank 0 sends each rank its share's entries */
  size_t *plan = s ? NULL : calloc(3 * (size_t)ranks + 1, sizeof *plan);
  if (!s && !plan) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  s = nle__comm_agree(ctx, s);
  for (int part = 0; !s && part < 2; part++) {
    size_t width = part == 0 ? sizeof(int32_t) : value;
    for (int r = 0; me == 0 && r < ranks; r++) {
      nle__row_range share = nle__rank_rows((size_t)m->n, ranks, r);
      plan[r] = (size_t)all->rowptr[share.begin] * width;
      plan[ranks + r] = (size_t)(all->rowptr[share.end] - all->rowptr[share.begin]) * width;
    }
    void *recv = NULL;
    static const char nothing = 0;
    const void *send = me != 0 ? (const void *)&nothing : part == 0 ? (const void *)all->colind : all->val;
    s = nle__comm_agree(ctx, nle__comm_alltoallv(ctx, send, plan, plan + ranks, &recv, plan + 2 * ranks));
    if (!s) memcpy(part == 0 ? (void *)(*out)->colind : (*out)->val, recv, nnz * width);
    free(recv);
  }
  free(plan);
  if (s) nle_csr_free(out);
  return s;
}

/* Rank 0's whole dataset (NULL elsewhere) shared out by rows. */
static nle_status scatter_dataset(nle_ctx *ctx, nle_dataset *all, nle_dataset **out) {
  int me = nle__rank(ctx);
  shape_msg m = {0};
  char *names = NULL;
  if (me == 0) {
    m = (shape_msg){.n = all->X ? all->X->rows : (uint64_t)all->sparse->rows,
                    .cols = all->X ? all->X->cols : (uint64_t)all->sparse->cols,
                    .sparse = all->X == NULL, .dtype = all->sparse ? (int32_t)all->sparse->dtype : 0,
                    .has_labels = all->labels != NULL, .n_classes = all->n_classes,
                    .has_names = all->class_names != NULL};
    names = pack_names(all, &m.names_len);
  }
  int failed = me == 0 && !names;
  nle_status s = nle__comm_agree(ctx, failed ? nle__fail(ctx, NLE_ERR_NOMEM, "out of memory") : NLE_OK);
  if (!s) s = nle__comm_bcast(ctx, &m, sizeof m, 0);
  if (!s && me != 0 && !(names = malloc(m.names_len))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, names, m.names_len, 0);
  nle_dataset *ds = s ? NULL : nle__calloc(ctx, 1, sizeof *ds, "a dataset");
  if (!s && !ds) s = NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  nle__rows rows;
  size_t held = me == 0 ? (size_t)m.n : 0;
  if (!s && m.sparse) s = scatter_csr(ctx, all ? all->sparse : NULL, &m, &rows, &ds->sparse);
  void *mine = NULL;
  if (!s && !m.sparse) s = scatter_rows(ctx, all ? all->X->data : NULL, held, (size_t)m.cols * sizeof(float), &mine, &rows);
  if (!s && !m.sparse && !(ds->X = nle__calloc(ctx, 1, sizeof *ds->X, "a matrix"))) s = NLE_ERR_NOMEM;
  if (!s && !m.sparse) {
    *ds->X = (nle_matf){rows.mine.end - rows.mine.begin, (size_t)m.cols, mine};
    mine = NULL;
  }
  free(mine);
  s = nle__comm_agree(ctx, s);
  if (!s && m.has_labels) s = scatter_rows(ctx, all ? all->labels : NULL, held, sizeof(int32_t), &mine, &rows);
  if (!s && m.has_labels) ds->labels = mine;
  if (!s) ds->n_classes = m.n_classes;
  if (!s) s = unpack_names(ctx, names, m.has_names, ds);
  free(names);
  s = nle__comm_agree(ctx, s);
  if (s) nle_dataset_free(&ds);
  *out = ds;
  return s;
}

nle_status nle__read_rows(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out) {
  *out = NULL;
  nle_status s = nle__comm_agree(ctx, same_input(ctx, source, opts));
  if (s) return s;
  /* a .npy by offset, an HDF5 dense array by hyperslab (their columns as
   * points: read whole) */
  int handled = 0;
  if (!opts || !opts->transpose) s = nle__npy_read_share(ctx, source, nle__ranks(ctx), nle__rank(ctx), out, &handled);
  if (!s && !handled) {
    s = nle__read_hdf5_share(ctx, source, opts, out);
    handled = *out != NULL;
  }
  int64_t agreed = handled; /* by rows on every rank, or on none */
  nle_status c = nle__comm_sum_i64(ctx, &agreed, 1);
  if (!c && agreed % nle__ranks(ctx))
    c = nle__fail(ctx, NLE_ERR_ARG, "%s: the ranks read different files under that name", source);
  s = nle__comm_agree(ctx, s ? s : c);
  if (s || agreed) {
    if (s) nle_dataset_free(out);
    return s;
  }
  /* any other source: rank 0 reads it whole */
  nle_dataset *all = NULL;
  if (nle__rank(ctx) == 0) {
    int ranks = nle__alone_begin(ctx);
    s = nle__read_whole(ctx, source, opts, &all);
    nle__alone_end(ctx, ranks);
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = scatter_dataset(ctx, all, out);
  nle_dataset_free(&all);
  return s;
}

/* Rank 0's class count and names (in `all`) to every rank. */
static nle_status share_classes(nle_ctx *ctx, nle_dataset *all, int32_t *n_classes, char ***class_names) {
  int me = nle__rank(ctx);
  int64_t head[3] = {0, 0, 0}; /* classes, names given, their bytes */
  size_t len = 0;
  char *names = me == 0 ? pack_names(all, &len) : NULL;
  nle_status s = me == 0 && !names ? nle__fail(ctx, NLE_ERR_NOMEM, "out of memory") : NLE_OK;
  if (me == 0) head[0] = all->n_classes, head[1] = all->class_names != NULL, head[2] = (int64_t)len;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, head, sizeof head, 0);
  if (!s && me != 0 && !(names = malloc((size_t)head[2]))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, names, (size_t)head[2], 0);
  nle_dataset meta = {.n_classes = (int32_t)head[0]};
  if (!s) s = unpack_names(ctx, names, head[1] && class_names, &meta);
  free(names);
  free(meta.name);
  s = nle__comm_agree(ctx, s);
  *n_classes = s ? 0 : meta.n_classes;
  if (class_names) *class_names = meta.class_names;
  if (s) nle_class_names_free(&meta.class_names, meta.n_classes);
  return s;
}

nle_status nle__read_csr_rows(nle_ctx *ctx, const char *path, nle_csr **out) {
  *out = NULL;
  nle_csr *all = NULL;
  nle_status s = nle__comm_agree(ctx, same_input(ctx, path, NULL));
  if (!s && nle__rank(ctx) == 0) {
    int ranks = nle__alone_begin(ctx);
    s = nle_read_csr_mtx(ctx, path, &all);
    nle__alone_end(ctx, ranks);
  }
  s = nle__comm_agree(ctx, s);
  shape_msg m = {0};
  if (!s && all) m = (shape_msg){.n = (uint64_t)all->rows, .cols = (uint64_t)all->cols, .sparse = 1, .dtype = all->dtype};
  if (!s) s = nle__comm_bcast(ctx, &m, sizeof m, 0);
  nle__rows rows;
  if (!s) s = scatter_csr(ctx, all, &m, &rows, out);
  nle_csr_free(&all);
  return s;
}

nle_status nle__labels_read_rows(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int64_t expected_n,
                                 int32_t **labels, int64_t *n, int32_t *n_classes, char ***class_names) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  /* each rank's count, the total rank 0 reads against */
  int64_t *counts = calloc((size_t)ranks, sizeof *counts), total = 0;
  nle_status s = counts ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  int64_t mine_count = expected_n > 0 ? expected_n : 0;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, &mine_count, sizeof mine_count, counts, NULL);
  for (int r = 0; !s && r < ranks; r++) total += counts[r];
  nle_dataset *all = NULL;
  if (!s && me == 0) {
    int saved = nle__alone_begin(ctx);
    s = nle__dataset_new(ctx, source, 0, 0, &all);
    if (!s) s = nle_labels_read(ctx, source, opts, total, &all->labels, &total, &all->n_classes,
                                class_names ? &all->class_names : NULL);
    nle__alone_end(ctx, saved);
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = share_classes(ctx, all, n_classes, class_names);
  /* rank 0 sends each rank the labels of its rows */
  size_t *plan = s ? NULL : calloc(3 * (size_t)ranks + 1, sizeof *plan);
  if (!s && !plan) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  for (int r = 0, at = 0; !s && me == 0 && r < ranks; at += (int)counts[r], r++) {
    plan[r] = (size_t)at * sizeof(int32_t);
    plan[ranks + r] = (size_t)counts[r] * sizeof(int32_t);
  }
  static const int32_t nothing = 0;
  void *mine = NULL;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_alltoallv(ctx, me == 0 ? all->labels : &nothing, plan, plan + ranks, &mine, plan + 2 * ranks);
  s = nle__comm_agree(ctx, s);
  free(plan);
  free(counts);
  nle_dataset_free(&all);
  if (s && class_names) nle_class_names_free(class_names, *n_classes);
  if (s) free(mine), mine = NULL, *n_classes = 0;
  *labels = mine;
  *n = s ? 0 : mine_count;
  return s;
}

/* --- writing ----------------------------------------------------------------- */

nle_status nle__gather_rows(nle_ctx *ctx, const void *data, size_t rows, size_t row_bytes, void **all, size_t *n) {
  *all = NULL;
  int64_t total = (int64_t)rows;
  nle_status s = nle__comm_sum_i64(ctx, &total, 1);
  if (!s && !(*all = malloc(total ? (size_t)total * row_bytes : 1))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, data, rows * row_bytes, *all, NULL);
  if (s) free(*all), *all = NULL;
  *n = s ? 0 : (size_t)total;
  return s;
}

/* rows x row_bytes at the file offset `at` of the temporary rank 0 staged
 * (all ranks see it: the output folder is shared). */
static nle_status put_rows(nle_ctx *ctx, const char *final, const char *tmp, const void *data, size_t bytes, size_t at) {
  int fd = open(tmp, O_WRONLY);
  if (fd < 0)
    return nle__fail(ctx, NLE_ERR_IO, "%s: rank %d cannot open the file rank 0 made (%s): the output folder must be "
                     "one all ranks see", final, nle__rank(ctx), strerror(errno));
  size_t done = 0;
  while (done < bytes) {
    ssize_t w = pwrite(fd, (const char *)data + done, bytes - done, (off_t)(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int err = done < bytes ? errno : fsync(fd) != 0 ? errno : 0;
  if (close(fd) != 0 && !err) err = errno;
  if (err || done < bytes) return nle__fail(ctx, NLE_ERR_IO, "%s: write failed on rank %d: %s", final, nle__rank(ctx), strerror(err ? err : EIO));
  return NLE_OK;
}

nle_status nle__write_npy_rows(nle_ctx *ctx, const char *path, const char *descr, const void *data, size_t elem,
                               int64_t rows, int64_t cols, int one_dim) {
  int me = nle__rank(ctx);
  int64_t shape[2] = {cols, one_dim}, total = rows, before = 0;
  nle_status s = nle__comm_same(ctx, shape, sizeof shape, "output columns");
  int64_t *counts = calloc((size_t)nle__ranks(ctx), sizeof *counts);
  if (!s && !counts) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, &total, sizeof total, counts, NULL);
  total = 0;
  for (int r = 0; !s && r < nle__ranks(ctx); r++) before += r < me ? counts[r] : 0, total += counts[r];
  free(counts);
  /* rank 0 stages the file: header and full size; the others learn its name */
  char header[256], tmp[4096] = "";
  size_t header_len = nle__npy_header_text(descr, total, cols, one_dim, header), row_bytes = (size_t)cols * elem;
  nle__afile af = {0};
  if (!s && me == 0) {
    s = nle__afile_open(ctx, path, &af);
    if (!s && (fwrite(header, 1, header_len, af.f) != header_len || fflush(af.f) != 0 ||
               ftruncate(fileno(af.f), (off_t)(header_len + (size_t)total * row_bytes)) != 0))
      s = nle__fail(ctx, NLE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    if (!s) snprintf(tmp, sizeof tmp, "%s", af.tmp_path);
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, tmp, sizeof tmp, 0);
  if (!s) s = put_rows(ctx, path, tmp, data, (size_t)rows * row_bytes, header_len + (size_t)before * row_bytes);
  s = nle__comm_agree(ctx, s);
  /* every rank wrote its rows: rank 0 puts the file in place (or stages it
   * in the transaction); else it is removed */
  if (me == 0 && af.f) s = s ? (nle__afile_abort(&af), s) : nle__afile_commit(ctx, &af);
  return nle__comm_agree(ctx, s);
}

nle_status nle__write_gathered(nle_ctx *ctx, const void *data, size_t rows, size_t row_bytes,
                               nle_status (*write)(nle_ctx *ctx, const void *all, size_t n, const void *user),
                               const void *user) {
  void *all = NULL;
  size_t n = 0;
  bool root = nle__rank(ctx) == 0;
  nle_status s = nle__gather_rows(ctx, data, rows, row_bytes, &all, &n);
  if (!s && root) {
    int ranks = nle__alone_begin(ctx);
    s = write(ctx, all, n, user);
    nle__alone_end(ctx, ranks);
  }
  free(all);
  return nle__comm_agree(ctx, s);
}

/* The gathered graph: rows' lengths, columns and values in rank order. */
typedef struct {
  const char *path;
  const nle_csr *m;
  void *colind, *val;
} csr_args;

static nle_status write_gathered_csr(nle_ctx *ctx, const void *lengths, size_t n, const void *user) {
  const csr_args *a = user;
  int64_t *rowptr = malloc((n + 1) * sizeof *rowptr);
  if (!rowptr) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  rowptr[0] = 0;
  for (size_t i = 0; i < n; i++) rowptr[i + 1] = rowptr[i] + ((const int64_t *)lengths)[i];
  nle_csr all = {(int64_t)n, a->m->cols, rowptr[n], rowptr, a->colind, a->m->dtype, a->val};
  nle_status s = nle_write_csr_mtx(ctx, a->path, &all);
  free(rowptr);
  return s;
}

nle_status nle__write_csr_gathered(nle_ctx *ctx, const char *path, const nle_csr *m) {
  size_t rows = (size_t)m->rows, nnz = (size_t)(m->rowptr[rows] - m->rowptr[0]), n;
  size_t value = m->dtype == NLE_F32 ? sizeof(float) : sizeof(double);
  int64_t *lengths = malloc((rows ? rows : 1) * sizeof *lengths);
  nle_status s = lengths ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  for (size_t i = 0; !s && i < rows; i++) lengths[i] = m->rowptr[i + 1] - m->rowptr[i];
  csr_args a = {path, m, NULL, NULL};
  s = nle__comm_agree(ctx, s);
  /* the entries from each row's first (a graph's rows may start past 0) */
  if (!s) s = nle__gather_rows(ctx, m->colind + m->rowptr[0], nnz, sizeof(int32_t), &a.colind, &n);
  if (!s) s = nle__gather_rows(ctx, (const char *)m->val + (size_t)m->rowptr[0] * value, nnz, value, &a.val, &n);
  if (!s) s = nle__write_gathered(ctx, lengths, rows, sizeof *lengths, write_gathered_csr, &a);
  free(lengths);
  free(a.colind);
  free(a.val);
  return s;
}
