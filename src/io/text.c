/* text.c — CSV, TSV and whitespace-separated text: delimiter detection, an
 * optional header, an optional label column (integers or strings). */
#include "io_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void nle_read_opts_init(nle_read_opts *o) {
  o->delimiter = 0;
  o->header = NLE_HEADER_AUTO;
  o->label_column = NLE_LABEL_AUTO;
  o->transpose = false;
  o->sparse_ok = false;
}

const nle_read_opts *nle__read_opts_or_defaults(const nle_read_opts *opts, nle_read_opts *defaults) {
  if (opts) return opts;
  nle_read_opts_init(defaults);
  return defaults;
}

/* A line of the buffer: [begin, end) without the newline and '\r'. */
typedef struct {
  const char *begin, *end;
  int64_t number; /* 1-based line number in the file */
} text_line;

typedef struct {
  const char *p, *end;
  int64_t number;
} line_cursor;

static int next_line(line_cursor *c, text_line *out) {
  while (c->p < c->end) {
    const char *b = c->p;
    const char *e = memchr(b, '\n', (size_t)(c->end - b));
    if (!e) e = c->end;
    c->p = e < c->end ? e + 1 : e;
    c->number++;
    const char *t = e;
    if (t > b && t[-1] == '\r') t--;
    const char *q = b;
    while (q < t && (*q == ' ' || *q == '\t')) q++;
    if (q == t || *q == '#') continue; /* blank lines and comments */
    out->begin = b;
    out->end = t;
    out->number = c->number;
    return 1;
  }
  return 0;
}

/* Splits a line into fields. With delim == ' ' runs of blanks separate; a
 * field may be double-quoted. Returns the number of fields (stops at max). */
typedef struct {
  const char *b, *e;
} field;

static int split_fields(const text_line *ln, char delim, field *f, int max) {
  const char *p = ln->begin, *end = ln->end;
  int n = 0;
  if (delim == ' ') {
    while (p < end) {
      while (p < end && (*p == ' ' || *p == '\t')) p++;
      if (p == end) break;
      const char *b = p;
      while (p < end && *p != ' ' && *p != '\t') p++;
      if (n < max) f[n] = (field){b, p};
      n++;
    }
    return n;
  }
  for (;;) {
    const char *b = p;
    if (p < end && *p == '"') {
      p++;
      while (p < end && *p != '"') p++;
      if (p < end) p++;
    }
    while (p < end && *p != delim) p++;
    if (n < max) f[n] = (field){b, p};
    n++;
    if (p >= end) break;
    p++;
  }
  return n;
}

static void trim_field(field *f) {
  while (f->b < f->e && isspace((unsigned char)*f->b)) f->b++;
  while (f->e > f->b && isspace((unsigned char)f->e[-1])) f->e--;
  if (f->e - f->b >= 2 && *f->b == '"' && f->e[-1] == '"') {
    f->b++;
    f->e--;
  }
}

/* 1: a finite or non-finite number filling the field; 0: not a number. */
static int parse_number(field f, double *v) {
  char tmp[128];
  trim_field(&f);
  size_t n = (size_t)(f.e - f.b);
  if (n == 0 || n >= sizeof tmp) return 0;
  memcpy(tmp, f.b, n);
  tmp[n] = '\0';
  char *endp;
  errno = 0;
  *v = strtod(tmp, &endp);
  return endp == tmp + n;
}

/* The first of tab, comma, semicolon that splits the first line and splits
 * the second the same way; failing that, the first that splits the first line
 * (so a ragged second row is reported as ragged); failing that, blanks. */
static char detect_delimiter(const text_line *first, const text_line *second) {
  static const char cands[] = {'\t', ',', ';'};
  field f[1];
  for (size_t c = 0; c < sizeof cands; c++) {
    int n1 = split_fields(first, cands[c], f, 0);
    if (n1 >= 2 && (!second || split_fields(second, cands[c], f, 0) == n1)) return cands[c];
  }
  for (size_t c = 0; c < sizeof cands; c++)
    if (split_fields(first, cands[c], f, 0) >= 2) return cands[c];
  return ' ';
}

static int field_is(field f, const char *word) {
  trim_field(&f);
  size_t n = (size_t)(f.e - f.b);
  return strlen(word) == n && !strncasecmp(f.b, word, n);
}

/* A header field that names the labels: label, labels, class, target, or y
 * unless the header also has an x (then x, y are coordinates); any case,
 * quotes and blanks ignored. */
static int names_labels(field f, int header_has_x) {
  static const char *const names[] = {"label", "labels", "class", "target"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (field_is(f, names[i])) return 1;
  return !header_has_x && field_is(f, "y");
}

static int line_is_header(const text_line *ln, const text_line *next, char delim, int label_col) {
  field f[4096];
  int n = split_fields(ln, delim, f, 4096);
  if (n > 4096) n = 4096;
  double v;
  for (int j = 0; j < n; j++) {
    if (j == label_col) continue;
    if (!parse_number(f[j], &v)) return 1;
  }
  /* Only the label field is text: a header if the next row's label is a number. */
  if (label_col >= 0 && label_col < n && !parse_number(f[label_col], &v) && next) {
    field g[4096];
    int m = split_fields(next, delim, g, 4096);
    if (label_col < m && m <= 4096 && parse_number(g[label_col], &v)) return 1;
  }
  return 0;
}

static char *field_strdup(field f) {
  trim_field(&f);
  size_t n = (size_t)(f.e - f.b);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, f.b, n);
    s[n] = '\0';
  }
  return s;
}

static void free_strings(char **s, int64_t n) {
  if (!s) return;
  for (int64_t i = 0; i < n; i++) free(s[i]);
  free(s);
}

/* How a text is laid out: the delimiter, the fields of a row, whether the
 * first line is a header, the label column (-1: none). */
typedef struct {
  char delim;
  int ncols, header, label_col;
} text_layout;

/* The first row's fields (numbers, label names, other text) decide whether
 * it is a header and, automatically, which column holds labels. */
static nle_status read_layout(nle_ctx *ctx, const char *name, const text_line *first, const text_line *second,
                              const nle_read_opts *opts, int probe, text_layout *L) {
  field counted[1];
  int ncols = split_fields(first, L->delim, counted, 0);
  int auto_label = opts->label_column == NLE_LABEL_AUTO;
  int label_col = auto_label ? -1 : opts->label_column == NLE_LABEL_LAST ? ncols - 1 : opts->label_column;
  if (label_col >= ncols)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: line %lld: label column %d but the row has %d fields",
                     name, (long long)first->number, label_col + 1, ncols);
  field *ff = malloc(sizeof(field) * (size_t)(ncols + 1));
  if (!ff) return nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", name);
  split_fields(first, L->delim, ff, ncols + 1);
  int numbers = 0, texts = 0, named = -1, first_text = -1, has_x = 0;
  for (int j = 0; j < ncols; j++) has_x |= field_is(ff[j], "x");
  for (int j = 0; j < ncols; j++) {
    double v;
    if (parse_number(ff[j], &v)) numbers++;
    else if (names_labels(ff[j], has_x) && named < 0) named = j;
    else if (j != label_col) {
      texts++;
      if (first_text < 0) first_text = j;
    }
  }
  int header = opts->header == NLE_HEADER_YES;
  if (opts->header == NLE_HEADER_AUTO) {
    if (numbers > 0 && texts > 0) {
      /* numbers beside words: a header with a typo, or a data row with one
       * (or with class names): refused instead of guessed, since a wrong
       * guess drops a data row */
      field t = ff[first_text];
      trim_field(&t);
      nle_status st = nle__fail(ctx, NLE_ERR_FORMAT,
                                "%s: line %lld: field %d (\"%.*s\") is not a number but %d other fields are: "
                                "a header must name every column and a data row hold only numbers "
                                "({@header=yes} or {@header=no} says which; {@label-column} for a column of class names)",
                                name, (long long)first->number, first_text + 1,
                                (int)(t.e - t.b > 40 ? 40 : t.e - t.b), t.b, numbers);
      free(ff);
      return st;
    }
    header = (texts > 0 || named >= 0) ? 1 : line_is_header(first, second, L->delim, label_col);
  }
  if (auto_label && header && named >= 0) {
    label_col = named;
    field t = ff[named];
    trim_field(&t);
    if (!probe)
      nle__log(ctx, 0, "note: %s: column %d (\"%.*s\") taken as the labels ({@label-column=none} keeps it a feature)",
             name, named + 1, (int)(t.e - t.b), t.b);
  }
  if (!probe)
    nle__log(ctx, 1, header ? "%s: line %lld taken as a header" : "%s: line %lld is data (no header)", name,
             (long long)first->number);
  free(ff);
  L->ncols = ncols;
  L->header = header;
  L->label_col = label_col;
  return NLE_OK;
}

/* The data rows into ds->X, the label column's fields into label_text. */
static nle_status read_rows(nle_ctx *ctx, const char *name, line_cursor scan, const text_layout *L, nle_dataset *ds,
                            char **label_text) {
  int ncols = L->ncols, label_col = L->label_col, dcols = ncols - (label_col >= 0 ? 1 : 0);
  field *f = malloc(sizeof(field) * (size_t)(ncols + 1));
  nle_status s = f ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", name);
  int64_t r = 0;
  text_line ln;
  while (!s && next_line(&scan, &ln)) {
    int n = split_fields(&ln, L->delim, f, ncols + 1);
    if (n != ncols) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld: %d fields where the first row has %d (ragged rows)",
                    name, (long long)ln.number, n, ncols);
      break;
    }
    float *row = ds->X->data + (size_t)r * (size_t)dcols;
    for (int j = 0, c = 0; j < ncols; j++) {
      if (j == label_col) {
        if (!(label_text[r] = field_strdup(f[j])))
          s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", name);
        continue;
      }
      double v;
      if (!parse_number(f[j], &v)) {
        trim_field(&f[j]);
        s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: line %lld, field %d: not a number: \"%.*s\"", name,
                      (long long)ln.number, j + 1, (int)(f[j].e - f[j].b > 40 ? 40 : f[j].e - f[j].b),
                      f[j].b);
        break;
      }
      if (!isfinite(v) || !isfinite((float)v)) {
        s = nle__fail(ctx, NLE_ERR_VALUE, "%s: line %lld, field %d: %s value", name,
                      (long long)ln.number, j + 1, isnan(v) ? "NaN" : "infinite (or beyond float range)");
        break;
      }
      row[c++] = (float)v;
    }
    r++;
  }
  free(f);
  return s;
}

/* probe: buf is the start of a longer text (complete lines); find the errors
 * it holds, say nothing, and do not call it empty. */
static nle_status parse_text(nle_ctx *ctx, const char *name, const char *buf, size_t len, const nle_read_opts *opts,
                             int probe, nle_dataset **out) {
  *out = NULL;
  nle_read_opts defaults;
  opts = nle__read_opts_or_defaults(opts, &defaults);
  if (memchr(buf, '\0', len))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: NUL byte in a text file (not a supported format)",
                     name, (size_t)((const char *)memchr(buf, '\0', len) - buf));
  /* a UTF-8 byte-order mark is not part of the first field */
  if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB && (unsigned char)buf[2] == 0xBF) {
    buf += 3;
    len -= 3;
  }
  line_cursor cur = {buf, buf + len, 0};
  text_line first, second;
  if (!next_line(&cur, &first))
    return probe ? NLE_OK : nle__fail(ctx, NLE_ERR_FORMAT, "%s: empty file (no data rows)", name);
  line_cursor after_first = cur;
  int has_second = next_line(&cur, &second);
  text_layout L = {opts->delimiter ? opts->delimiter : detect_delimiter(&first, has_second ? &second : NULL), 0, 0,
                   -1};
  if (probe && !has_second) return NLE_OK; /* the delimiter and header are decided on two lines */
  nle_status s = read_layout(ctx, name, &first, has_second ? &second : NULL, opts, probe, &L);
  if (s) return s;

  /* Count data rows. */
  line_cursor scan = L.header ? after_first : (line_cursor){buf, buf + len, 0};
  line_cursor data_start = scan;
  int64_t rows = 0;
  text_line ln;
  while (next_line(&scan, &ln)) rows++;
  if (rows == 0) return probe ? NLE_OK : nle__fail(ctx, NLE_ERR_FORMAT, "%s: no data rows after the header", name);

  nle_dataset *ds = NULL;
  s = nle__dataset_new(ctx, name, (size_t)rows, (size_t)(L.ncols - (L.label_col >= 0 ? 1 : 0)), &ds);
  if (s) return s;
  char **label_text = NULL;
  if (L.label_col >= 0) {
    label_text = calloc((size_t)rows, sizeof *label_text);
    if (!label_text) {
      nle_dataset_free(&ds);
      return nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory for labels", name);
    }
  }
  s = read_rows(ctx, name, data_start, &L, ds, label_text);
  if (!s && label_text)
    s = nle__labels_from_strings(ctx, name, label_text, rows, &ds->labels, &ds->n_classes,
                                 &ds->class_names);
  free_strings(label_text, rows);
  if (s) nle_dataset_free(&ds);
  *out = ds;
  return s;
}

nle_status nle_parse_text(nle_ctx *ctx, const char *name, const char *buf, size_t len,
                          const nle_read_opts *opts, nle_dataset **out) {
  return parse_text(ctx, name, buf, len, opts, 0, out);
}

/* Gzip'ed: every byte text, and the whole lines of its start must parse. */
nle_status nle__text_judge(nle_ctx *ctx, const char *name, const uint8_t *start, size_t len, int whole,
                           const void *opts, size_t *limit, int *text) {
  (void)limit;
  *text = 1;
  if (whole) return NLE_OK;
  const char *head = (const char *)start;
  const char *last = len ? memrchr(head, '\n', len) : NULL;
  if (!last) return NLE_OK; /* not one whole line yet: nothing to judge */
  nle_dataset *ds;
  nle_status s = parse_text(ctx, name, head, (size_t)(last - head) + 1, opts, 1, &ds);
  nle_dataset_free(&ds);
  return s;
}

/* Text takes whatever no other reader claims (last in readers.def). */
int nle__text_magic(const uint8_t *head, size_t len) {
  (void)head, (void)len;
  return 1;
}

nle_status nle__text_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                           const nle_read_opts *opts, int flags, nle_dataset **out) {
  (void)inner, (void)flags;
  return nle__transpose_if_asked(ctx, name, opts, nle_parse_text(ctx, name, (const char *)buf, len, opts, out), out);
}
