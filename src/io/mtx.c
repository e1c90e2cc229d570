/* mtx.c — sparse matrices in Matrix Market coordinate format (the format
 * `nlembed affinity` writes), read into CSR with sorted columns. Every
 * malformed line is an error naming the line; duplicates are refused rather
 * than silently summed. */
#include "io_internal.h"

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
