/* mtx.c — sparse matrices in Matrix Market coordinate format (the format
 * `nlembed affinity` writes), read into CSR with sorted columns. Every
 * malformed line is an error naming the line; duplicates are refused rather
 * than silently summed. */
#include "io_internal.h"
#include "../core/comm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  int64_t i, j;
  double v;
  int64_t line;
} mtx_entry;

static int by_position(const void *a, const void *b) {
  const mtx_entry *x = a, *y = b;
  if (x->i != y->i) return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* The next line of buf from *pos (NUL-terminated in place); NULL at the end. */
static char *next_line(char *buf, size_t len, size_t *pos, int64_t *lineno) {
  if (*pos >= len) return NULL;
  char *start = buf + *pos;
  char *nl = memchr(start, '\n', len - *pos);
  size_t n = nl ? (size_t)(nl - start) : len - *pos;
  start[n] = '\0';
  if (n && start[n - 1] == '\r') start[n - 1] = '\0';
  *pos += n + 1;
  (*lineno)++;
  return start;
}

nle_status nle_read_csr_mtx(nle_ctx *ctx, const char *path, nle_csr **out) {
  *out = NULL;
  if (nle__distributed(ctx)) return nle__read_csr_rows(ctx, path, out); /* this rank's rows (rows.c) */
  uint8_t *raw;
  size_t len;
  nle_status s = nle__read_file(ctx, path, &raw, &len);
  if (s) return s;
  char *buf = realloc(raw, len + 1);
  if (!buf) {
    free(raw);
    return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  }
  buf[len] = '\0';
  size_t pos = 0;
  int64_t lineno = 0, rows = 0, cols = 0, nnz = 0, count = 0;
  char *line = next_line(buf, len, &pos, &lineno), field[32] = "", symmetry[32] = "";
  if (!line || strncmp(line, "%%MatrixMarket", 14) != 0) {
    free(buf);
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: not a Matrix Market file (no %%%%MatrixMarket header)", path);
  }
  char object[32] = "", format[32] = "";
  if (sscanf(line + 14, "%31s %31s %31s %31s", object, format, field, symmetry) != 4 || strcasecmp(object, "matrix") ||
      strcasecmp(format, "coordinate") ||
      (strcasecmp(field, "real") && strcasecmp(field, "integer") && strcasecmp(field, "pattern")) ||
      (strcasecmp(symmetry, "general") && strcasecmp(symmetry, "symmetric"))) {
    free(buf);
    return nle__fail(ctx, NLE_ERR_FORMAT,
                     "%s: line 1: only 'matrix coordinate real|integer|pattern general|symmetric' is supported", path);
  }
  int pattern = !strcasecmp(field, "pattern"), symmetric = !strcasecmp(symmetry, "symmetric");
  while ((line = next_line(buf, len, &pos, &lineno)) && (line[0] == '%' || !line[strspn(line, " \t")])) {
  }
  char *end;
  long long r0 = 0, c0 = 0, z0 = 0;
  if (line && sscanf(line, "%lld %lld %lld", &r0, &c0, &z0) == 3) rows = r0, cols = c0, nnz = z0;
  else rows = 0;
  if (!line ||
      rows < 1 || cols < 1 || nnz < 0 || rows > INT32_MAX || cols > INT32_MAX) {
    free(buf);
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: expected 'rows cols entries'", path, (long long)lineno);
  }
  int64_t cap = symmetric ? 2 * nnz : nnz;
  s = nle__check_memory(ctx, (double)cap * sizeof(mtx_entry), "the Matrix Market entries");
  mtx_entry *e = s ? NULL : nle__malloc(ctx, (size_t)(cap ? cap : 1) * sizeof *e, "entries");
  if (!s && !e) s = NLE_ERR_NOMEM;
  while (!s && (line = next_line(buf, len, &pos, &lineno))) {
    char *p = line + strspn(line, " \t");
    if (!*p || *p == '%') continue;
    if (count == nnz) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: more entries than the %lld announced", path,
                    (long long)lineno, (long long)nnz);
      break;
    }
    errno = 0;
    long long i = strtoll(p, &end, 10), j = end != p ? strtoll(end, &end, 10) : 0;
    double v = 1.0;
    if (!pattern) {
      char *vstart = end;
      v = strtod(vstart, &end);
      if (end == vstart) i = 0;
    }
    while (*end == ' ' || *end == '\t') end++;
    if (i < 1 || j < 1 || *end || errno) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: expected 'row column%s'", path, (long long)lineno,
                    pattern ? "" : " value");
    } else if (i > rows || j > cols) {
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: entry (%lld, %lld) outside the %lld x %lld matrix", path,
                    (long long)lineno, i, j, (long long)rows, (long long)cols);
    } else if (!isfinite(v)) {
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: value is not finite", path, (long long)lineno);
    } else {
      e[count++] = (mtx_entry){i - 1, j - 1, v, lineno};
    }
  }
  if (!s && count < nnz)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: %lld entries announced, %lld found (truncated?)", path, (long long)nnz,
                  (long long)count);
  int64_t total = count;
  for (int64_t k = 0; !s && symmetric && k < count; k++)
    if (e[k].i != e[k].j) e[total++] = (mtx_entry){e[k].j, e[k].i, e[k].v, e[k].line};
  if (!s) qsort(e, (size_t)total, sizeof *e, by_position);
  for (int64_t k = 1; !s && k < total; k++)
    if (e[k].i == e[k - 1].i && e[k].j == e[k - 1].j)
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: entry (%lld, %lld) given twice", path, (long long)e[k].line,
                    (long long)e[k].i + 1, (long long)e[k].j + 1);
  if (!s) s = nle_csr_alloc(ctx, rows, cols, total, NLE_F64, out);
  if (!s) {
    for (int64_t k = 0; k < total; k++) {
      (*out)->rowptr[e[k].i + 1]++;
      (*out)->colind[k] = (int32_t)e[k].j;
      ((double *)(*out)->val)[k] = e[k].v;
    }
    for (int64_t r = 0; r < rows; r++) (*out)->rowptr[r + 1] += (*out)->rowptr[r];
  }
  free(e);
  free(buf);
  return s;
}

/* ---- Matrix Market files as data ------------------------------------------
 * coordinate: a sparse dataset (10x Genomics' matrix.mtx among them); array:
 * a dense one, stored by columns. The buffer is read in place (not written
 * to); each line is copied out before it is parsed. */

typedef struct {
  const char *name;
  const uint8_t *buf;
  size_t len, pos;
  int64_t lineno;
  char line[256];
} mm_reader;

/* The next line into r->line; 0 at the end, -1 when too long. */
static int mm_next(mm_reader *r) {
  if (r->pos >= r->len) return 0;
  const uint8_t *start = r->buf + r->pos, *nl = memchr(start, '\n', r->len - r->pos);
  size_t n = nl ? (size_t)(nl - start) : r->len - r->pos;
  r->pos += n + (nl ? 1 : 0);
  r->lineno++;
  if (n && start[n - 1] == '\r') n--;
  if (n >= sizeof r->line) return -1;
  memcpy(r->line, start, n);
  r->line[n] = '\0';
  return 1;
}

typedef struct {
  int coordinate, pattern, symmetry; /* symmetry: 0 general, 1 symmetric, -1 skew-symmetric */
} mm_header;

static nle_status mm_banner(nle_ctx *ctx, const char *name, const char *line, mm_header *h) {
  char object[32] = "", format[32] = "", field[32] = "", symmetry[32] = "";
  int n = sscanf(line, "%%%%MatrixMarket %31s %31s %31s %31s", object, format, field, symmetry);
  if (n != 4 || strcasecmp(object, "matrix"))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: expected '%%%%MatrixMarket matrix FORMAT FIELD SYMMETRY'", name);
  h->coordinate = !strcasecmp(format, "coordinate");
  if (!h->coordinate && strcasecmp(format, "array"))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: Matrix Market format '%.31s' (coordinate or array)", name, format);
  h->pattern = !strcasecmp(field, "pattern");
  if (!h->pattern && strcasecmp(field, "real") && strcasecmp(field, "integer") && strcasecmp(field, "double"))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: line 1: Matrix Market field '%.31s' is not read (real, integer, pattern)",
                     name, field);
  if (h->pattern && !h->coordinate)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: a pattern matrix must be in coordinate format", name);
  if (!strcasecmp(symmetry, "general")) h->symmetry = 0;
  else if (!strcasecmp(symmetry, "symmetric")) h->symmetry = 1;
  else if (!strcasecmp(symmetry, "skew-symmetric")) h->symmetry = -1;
  else
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: line 1: Matrix Market symmetry '%.31s' is not read (general, symmetric, skew-symmetric)",
                     name, symmetry);
  return NLE_OK;
}

int nle__mtx_magic(const uint8_t *head, size_t len) { return len >= 14 && !memcmp(head, "%%MatrixMarket", 14); }

/* Gzip'ed: its header now, its size line bounds the rest. */
nle_status nle__mtx_judge(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                          const void *opts, size_t *limit, int *text) {
  (void)whole, (void)opts, (void)limit;
  *text = 1;
  mm_reader r = {name, head, len, 0, 0, ""};
  mm_header h;
  int got = mm_next(&r);
  if (got < 0) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: too long for a Matrix Market header", name);
  return mm_banner(ctx, name, r.line, &h);
}

/* Where entry k's line was: the lines of the entries, as runs. */
typedef struct {
  int64_t *at; /* pairs (first entry of a run, its line) */
  size_t count, cap;
} mm_runs;

static int mm_run_add(mm_runs *runs, int64_t k, int64_t line) {
  if (runs->count == runs->cap) {
    size_t cap = runs->cap ? runs->cap * 2 : 16;
    int64_t *grown = realloc(runs->at, cap * 2 * sizeof *grown);
    if (!grown) return 0;
    runs->at = grown;
    runs->cap = cap;
  }
  runs->at[2 * runs->count] = k;
  runs->at[2 * runs->count + 1] = line;
  runs->count++;
  return 1;
}

static int64_t mm_line_of(const mm_runs *runs, int64_t k) {
  size_t r = 0;
  while (r + 1 < runs->count && runs->at[2 * (r + 1)] <= k) r++;
  return runs->count ? runs->at[2 * r + 1] + (k - runs->at[2 * r]) : 0;
}

/* The next data line (blank lines and comments skipped): 1, 0 at the end. */
static int mm_data_line(nle_ctx *ctx, mm_reader *r, nle_status *s) {
  int got;
  while ((got = mm_next(r)) > 0) {
    const char *p = r->line + strspn(r->line, " \t");
    if (*p && *p != '%') return 1;
  }
  if (got < 0) *s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: too long for Matrix Market data", r->name, (long long)r->lineno);
  return 0;
}

static int mm_number(const char **p, double *v) {
  char *end;
  errno = 0;
  *v = strtod(*p, &end);
  if (end == *p || (*end && *end != ' ' && *end != '\t')) return 0;
  *p = end + strspn(end, " \t");
  return 1;
}

static int mm_index(const char **p, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(*p, &end, 10);
  if (end == *p || errno || (*end && *end != ' ' && *end != '\t')) return 0;
  *v = x;
  *p = end + strspn(end, " \t");
  return 1;
}

static nle_status mm_coordinate(nle_ctx *ctx, mm_reader *r, const mm_header *h, int64_t rows, int64_t cols,
                                int64_t nnz, int transpose, int sparse_ok, nle_dataset **out) {
  const char *name = r->name;
  int64_t cap = h->symmetry ? 2 * nnz : nnz;
  nle_status s = nle__sparse_fits(ctx, name, transpose ? cols : rows, transpose ? rows : cols, cap, sparse_ok);
  if (s) return s;
  s = nle__check_memory(ctx, (double)cap * 12 + (h->symmetry ? (double)nnz * 8 : 0), "the Matrix Market entries");
  if (s) return nle__fail_prefix(ctx, name);
  size_t room = (size_t)(cap ? cap : 1);
  int32_t *ri = malloc(room * sizeof *ri), *ci = malloc(room * sizeof *ci);
  float *v = malloc(room * sizeof *v);
  int64_t *mirror_of = h->symmetry ? malloc(room * sizeof *mirror_of) : NULL;
  mm_runs runs = {NULL, 0, 0};
  if (!ri || !ci || !v || (h->symmetry && !mirror_of)) s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", name);
  int64_t count = 0, last_line = -2;
  while (!s && mm_data_line(ctx, r, &s)) {
    if (count == nnz) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: more entries than the %lld announced", name,
                    (long long)r->lineno, (long long)nnz);
      break;
    }
    const char *p = r->line + strspn(r->line, " \t");
    int64_t i, j;
    double x = 1.0;
    if (!mm_index(&p, &i) || !mm_index(&p, &j) || (!h->pattern && !mm_number(&p, &x)) || *p) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: expected 'row column%s'", name, (long long)r->lineno,
                    h->pattern ? "" : " value");
    } else if (i < 1 || j < 1 || i > rows || j > cols) {
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: entry (%lld, %lld) outside the %lld x %lld matrix", name,
                    (long long)r->lineno, (long long)i, (long long)j, (long long)rows, (long long)cols);
    } else if (nle__float_problem(x)) {
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: %s value", name, (long long)r->lineno, nle__float_problem(x));
    } else if (h->symmetry && j > i) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: entry (%lld, %lld) above the diagonal of a %s matrix", name,
                    (long long)r->lineno, (long long)i, (long long)j, h->symmetry > 0 ? "symmetric" : "skew-symmetric");
    } else if (h->symmetry < 0 && i == j) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: a diagonal entry in a skew-symmetric matrix", name,
                    (long long)r->lineno);
    } else {
      if (r->lineno != last_line + 1 && !mm_run_add(&runs, count, r->lineno))
        s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", name);
      last_line = r->lineno;
      ri[count] = (int32_t)((transpose ? j : i) - 1);
      ci[count] = (int32_t)((transpose ? i : j) - 1);
      v[count] = (float)x;
      count++;
    }
  }
  if (!s && count < nnz)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: %lld entries announced, %lld found (truncated?)", name, (long long)nnz,
                  (long long)count);
  int64_t total = count;
  for (int64_t k = 0; !s && h->symmetry && k < count; k++)
    if (ri[k] != ci[k]) {
      ri[total] = ci[k];
      ci[total] = ri[k];
      v[total] = h->symmetry > 0 ? v[k] : -v[k];
      mirror_of[total - count] = k;
      total++;
    }
  nle_csr *M = NULL;
  int64_t dup[2];
  if (!s) {
    s = nle__csr_from_triplets(ctx, transpose ? cols : rows, transpose ? rows : cols, total, ri, ci, v, &M, dup);
    if (s == NLE_ERR_VALUE && dup[0] >= 0) {
      int64_t a = dup[0] < count ? dup[0] : mirror_of[dup[0] - count];
      int64_t b = dup[1] < count ? dup[1] : mirror_of[dup[1] - count];
      int64_t later = a > b ? a : b;
      int64_t ei = (transpose ? ci[later] : ri[later]) + 1, ej = (transpose ? ri[later] : ci[later]) + 1;
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: entry (%lld, %lld) given twice", name,
                    (long long)mm_line_of(&runs, later), (long long)ei, (long long)ej);
    }
  }
  free(ri);
  free(ci);
  free(v);
  free(mirror_of);
  free(runs.at);
  if (s) return s;
  return nle__dataset_from_sparse(ctx, name, M, 0, 0, sparse_ok, out);
}

static nle_status mm_array(nle_ctx *ctx, mm_reader *r, const mm_header *h, int64_t rows, int64_t cols,
                           int transpose, nle_dataset **out) {
  const char *name = r->name;
  nle_dataset *ds;
  nle_status s = nle__dataset_new(ctx, name, (size_t)(transpose ? cols : rows), (size_t)(transpose ? rows : cols), &ds);
  if (s) return s;
  float *X = ds->X->data;
  size_t stride = ds->X->cols;
  /* by columns; a symmetric matrix gives its lower triangle, a
   * skew-symmetric one below the diagonal */
  for (int64_t j = 0; !s && j < cols; j++)
    for (int64_t i = h->symmetry > 0 ? j : h->symmetry < 0 ? j + 1 : 0; !s && i < rows; i++) {
      double x;
      const char *p = r->line;
      if (!mm_data_line(ctx, r, &s)) {
        if (!s)
          s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: the values end at entry (%lld, %lld) of the %lld x %lld matrix (truncated?)",
                        name, (long long)i + 1, (long long)j + 1, (long long)rows, (long long)cols);
        break;
      }
      p = r->line + strspn(r->line, " \t");
      if (!mm_number(&p, &x) || *p) {
        s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: expected one value", name, (long long)r->lineno);
      } else if (nle__float_problem(x)) {
        s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld: %s value", name, (long long)r->lineno, nle__float_problem(x));
      } else {
        size_t a = (size_t)(transpose ? j : i), b = (size_t)(transpose ? i : j);
        X[a * stride + b] = (float)x;
        if (h->symmetry) X[b * stride + a] = (float)(h->symmetry > 0 ? x : -x);
      }
    }
  if (!s && mm_data_line(ctx, r, &s))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: more values than the %lld x %lld matrix holds", name,
                  (long long)r->lineno, (long long)rows, (long long)cols);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

nle_status nle__parse_mtx(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, int transpose,
                          const nle_read_opts *opts, nle_dataset **out) {
  *out = NULL;
  mm_reader r = {name, buf, len, 0, 0, ""};
  mm_header h;
  if (mm_next(&r) < 0) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line 1: too long for a Matrix Market header", name);
  nle_status s = mm_banner(ctx, name, r.line, &h);
  if (s) return s;
  if (!mm_data_line(ctx, &r, &s))
    return s ? s : nle__fail(ctx, NLE_ERR_FORMAT, "%s: no size line after the Matrix Market header", name);
  const char *p = r.line + strspn(r.line, " \t");
  int64_t rows = 0, cols = 0, nnz = 0;
  if (!mm_index(&p, &rows) || !mm_index(&p, &cols) || (h.coordinate && !mm_index(&p, &nnz)) || *p)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: expected 'rows columns%s'", name, (long long)r.lineno,
                     h.coordinate ? " entries" : "");
  if (rows < 1 || cols < 1 || nnz < 0 || rows > INT32_MAX || cols > INT32_MAX)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: a matrix of %lld x %lld%s", name, (long long)r.lineno,
                     (long long)rows, (long long)cols, nnz < 0 ? " with a negative count of entries" : "");
  if (h.symmetry && rows != cols)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: a %s matrix of %lld x %lld, not square", name,
                     (long long)r.lineno, h.symmetry > 0 ? "symmetric" : "skew-symmetric", (long long)rows,
                     (long long)cols);
  /* every entry takes a line of at least 4 bytes ("1 1\n"), every value 2:
   * what the file cannot hold is refused before anything is allocated */
  size_t left = len - r.pos;
  if (h.coordinate ? (uint64_t)nnz > left / 4 + 1 : (double)rows * (double)cols / (h.symmetry ? 2.0 : 1.0) > (double)left / 2 + 1)
    return h.coordinate
               ? nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: %lld entries announced, more than the %zu bytes after it hold (truncated?)",
                           name, (long long)r.lineno, (long long)nnz, left)
               : nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: %lld x %lld values announced, more than the %zu bytes after it hold (truncated?)",
                           name, (long long)r.lineno, (long long)rows, (long long)cols, left);
  nle_read_opts defaults;
  opts = nle__read_opts_or_defaults(opts, &defaults);
  return h.coordinate ? mm_coordinate(ctx, &r, &h, rows, cols, nnz, transpose, opts->sparse_ok, out)
                      : mm_array(ctx, &r, &h, rows, cols, transpose, out);
}

nle_status nle__mtx_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out) {
  (void)inner, (void)flags;
  return nle__parse_mtx(ctx, name, buf, len, opts && opts->transpose, opts, out);
}
