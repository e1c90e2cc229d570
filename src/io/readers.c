/* readers.c — the dispatcher: which reader takes a source. The readers are
 * the rows of readers.def, tried in its order by their magic; what is named
 * here and not there is what no reader owns: a gzip layer around any of
 * them, FILE:NAME inside a container, a 10x Genomics folder, built-in
 * datasets, and formats users bring that nlembed refuses by name. */
#include "io_internal.h"
#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  nle__magic_fn *magic;
  nle__parse_fn *parse;
  nle__read_fn *read;
  nle__judge_fn *judge;
  int traits;
} nle__reader;

/* Each row's entry points, declared from the row. */
#define NLE_READER(name, magic, parse, read, judge, traits, fuzz)                                                  \
  nle__magic_fn magic;                                                                                             \
  nle__parse_fn parse;                                                                                             \
  nle__read_fn read;                                                                                               \
  nle__judge_fn judge;
#define NLE_READER_NAMED(reader, ext, what)
#define NLE_FUZZ(target)
#include "readers.def"
#undef NLE_READER
#undef NLE_READER_NAMED

/* Each row's index, READER_name (so a row named elsewhere in the table is
 * checked by the compiler). */
enum {
#define NLE_READER(name, magic, parse, read, judge, traits, fuzz) READER_##name,
#define NLE_READER_NAMED(reader, ext, what)
#include "readers.def"
#undef NLE_READER
  READER_COUNT
};

static const nle__reader readers[] = {
#define NLE_READER(name, magic, parse, read, judge, traits, fuzz) {magic, parse, read, judge, traits},
#include "readers.def"
#undef NLE_READER
#undef NLE_READER_NAMED
};
/* the last row claims whatever the others do not */
static const nle__reader *const fallback = &readers[READER_COUNT - 1];

static const struct {
  int reader;
  const char *ext, *what;
} named[] = {
#define NLE_READER(name, magic, parse, read, judge, traits, fuzz)
#define NLE_READER_NAMED(reader, ext, what) {READER_##reader, ext, what},
#include "readers.def"
#undef NLE_READER
#undef NLE_READER_NAMED
#undef NLE_FUZZ
};

/* The first row (with all of `traits`) whose magic claims the bytes. */
static const nle__reader *reader_of(const uint8_t *head, size_t len, int traits) {
  for (size_t i = 0; i < READER_COUNT; i++)
    if ((readers[i].traits & traits) == traits && readers[i].magic(head, len)) return &readers[i];
  return NULL;
}

nle_status nle__read_by_parsing(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts,
                                int flags, nle_dataset **out) {
  (void)ctx, (void)path, (void)inner, (void)opts, (void)flags;
  *out = NULL;
  return NLE_OK;
}

nle_status nle__gzip_refused(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                             const void *user, size_t *limit, int *text) {
  (void)head, (void)len, (void)whole, (void)user, (void)limit, (void)text;
  return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: a gzip'ed HDF5, .mat or .npz file: decompress it first (gunzip)",
                   name);
}

/* Formats users bring that nlembed does not read, known by their first
 * bytes: refused by name rather than parsed as text. */
static const char *foreign_format(const uint8_t *b, size_t len) {
  if (len >= 3 && !memcmp(b, "BZh", 3)) return "bzip2-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 6 && !memcmp(b, "\xfd" "7zXZ\0", 6)) return "xz-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 4 && !memcmp(b, "\x28\xb5\x2f\xfd", 4)) return "zstd-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 6 && !memcmp(b, "7z\xbc\xaf\x27\x1c", 6)) return "a 7-Zip archive";
  if (len >= 4 && !memcmp(b, "PAR1", 4)) return "a Parquet file (save as CSV, .npy or .h5ad)";
  if (len >= 6 && !memcmp(b, "ARROW1", 6)) return "an Arrow/Feather file (save as CSV, .npy or .h5ad)";
  if (len >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)";
  if (len >= 5 && (!memcmp(b, "RDX2\n", 5) || !memcmp(b, "RDX3\n", 5) || !memcmp(b, "X\n\0\0\0", 5)))
    return "R data (save with write.csv, Matrix::writeMM or as .h5ad)";
  return NULL;
}

/* The same by name, for formats whose content would otherwise be taken for
 * another (a gzip'ed R file, a spreadsheet's zip). */
static const char *foreign_name(const char *path) {
  static const struct {
    const char *ext, *what;
  } names[] = {{".rds", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".rda", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".rdata", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".xlsx", "a spreadsheet (save it as CSV)"},
               {".xls", "a spreadsheet (save it as CSV)"},
               {".ods", "a spreadsheet (save it as CSV)"},
               {".parquet", "a Parquet file (save as CSV, .npy or .h5ad)"},
               {".feather", "an Arrow/Feather file (save as CSV, .npy or .h5ad)"},
               {".pkl", "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)"},
               {".pickle", "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)"}};
  char ext[16];
  nle__path_ext(path, ext, sizeof ext);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(ext, names[i].ext)) return names[i].what;
  return NULL;
}

/* The reader of bytes that are not gzip'ed: NULL, with *refused set, for a
 * format refused by its first bytes (which no reader claims). */
static const nle__reader *plain_reader(const uint8_t *buf, size_t len, const char **refused) {
  const nle__reader *r = reader_of(buf, len, 0);
  *refused = r == fallback ? foreign_format(buf, len) : NULL;
  return *refused ? NULL : r;
}

int nle__is_plain_text(const uint8_t *buf, size_t len) {
  return !nle__gzip_magic(buf, len) && reader_of(buf, len, 0) == fallback;
}

/* What a gzip stream is decides how much of it is worth inflating (its
 * reader's judge): a bomb is refused from its start, not after its
 * inflation. */
static nle_status judge_inflated(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                                 const void *opts, size_t *limit, int *text) {
  *limit = SIZE_MAX;
  *text = 0;
  if (nle__gzip_magic(head, len))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: gzip data inside gzip data is not supported", name);
  const char *refused;
  const nle__reader *r = plain_reader(head, len, &refused);
  if (!r) return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: gzip'ed %s is not read", name, refused);
  return r->judge(ctx, name, head, len, whole, opts, limit, text);
}

/* Parses a buffer whose format is recognised from its first bytes. */
nle_status nle__parse_buffer(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                             const nle_read_opts *opts, int depth, nle_dataset **out) {
  *out = NULL;
  if (len == 0) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: empty file", name);
  if (nle__gzip_magic(buf, len)) {
    if (depth > 0)
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: gzip data inside gzip data is not supported", name);
    uint8_t *raw;
    size_t raw_len;
    nle_status s = nle__gunzip_judged(ctx, name, buf, len, judge_inflated, opts, &raw, &raw_len);
    if (s) return s;
    s = nle__parse_buffer(ctx, name, raw, raw_len, opts, depth + 1, out);
    free(raw);
    return s;
  }
  const char *refused;
  const nle__reader *r = plain_reader(buf, len, &refused);
  if (!r) return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: %s is not read", name, refused);
  return r->parse(ctx, name, buf, len, NULL, opts, 0, out);
}

/* "FILE:NAME" when FILE exists and the whole does not: *file (allocated)
 * and *inner; 0 for a plain path. The rightmost colon that leaves an
 * existing file wins. */
static int split_source(nle_ctx *ctx, const char *source, char **file, const char **inner, nle_status *s) {
  struct stat st;
  *file = NULL;
  *inner = NULL;
  *s = NLE_OK;
  if (stat(source, &st) == 0) return 0;
  for (const char *c = strrchr(source, ':'); c; c = c > source ? memrchr(source, ':', (size_t)(c - source)) : NULL) {
    char *prefix = strndup(source, (size_t)(c - source));
    if (!prefix) {
      *s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
      return 0;
    }
    if (stat(prefix, &st) == 0 && S_ISREG(st.st_mode)) {
      *file = prefix;
      *inner = c + 1;
      return 1;
    }
    free(prefix);
  }
  return 0;
}

/* The first bytes of a file (0 when it cannot be read: the reader that
 * follows names the problem). Enough for every magic (an HDF5 signature
 * after a user block of up to 4096 bytes). */
enum { HEAD_BYTES = 4096 + 8 };
static size_t file_head(const char *path, uint8_t *head, size_t cap) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  size_t got = f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? fread(head, 1, cap, f) : 0;
  if (f) fclose(f);
  return got;
}

/* A file by its reader's path entry, else read whole and parsed. */
static nle_status read_with(nle_ctx *ctx, const nle__reader *r, const char *path, const char *inner,
                            const nle_read_opts *opts, int flags, nle_dataset **out) {
  nle_status s = r->read(ctx, path, inner, opts, flags, out);
  if (s || *out) return s;
  uint8_t *buf = NULL;
  size_t len;
  s = nle__read_file(ctx, path, &buf, &len);
  if (!s) s = r->parse(ctx, path, buf, len, inner, opts, flags, out);
  free(buf);
  return s;
}

/* The file to open for source (*path), the name inside it, whether it was
 * split so (split_source); *file to free. */
static nle_status source_path(nle_ctx *ctx, const char *source, char **file, const char **inner, const char **path,
                              int *split) {
  nle_status s;
  *split = split_source(ctx, source, file, inner, &s);
  *path = *split ? *file : source;
  return s;
}

nle_status nle__read_container(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int flags,
                               nle_dataset **out, int *handled) {
  *out = NULL;
  *handled = 0;
  char *file;
  const char *inner, *path;
  int split;
  nle_status s = source_path(ctx, source, &file, &inner, &path, &split);
  if (s) return s;
  uint8_t head[HEAD_BYTES];
  const nle__reader *r = reader_of(head, file_head(path, head, sizeof head), NLE__CONTAINER);
  if (!r && !split) return NLE_OK;
  *handled = 1;
  if (r)
    s = read_with(ctx, r, path, inner, opts, flags, out);
  else
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: not an HDF5, .mat or .npz file: there is no '%s' inside it (no such file either)",
                  path, inner);
  /* the dataset is named as the source was */
  if (!s && (s = nle__dataset_rename(ctx, *out, source))) nle_dataset_free(out);
  free(file);
  return s;
}

nle_status nle__read_hdf5_share(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out) {
  *out = NULL;
  if (opts && opts->transpose) return NLE_OK;
  char *file;
  const char *inner, *path;
  int split;
  nle_status s = source_path(ctx, source, &file, &inner, &path, &split);
  if (s) return s;
  /* HDF5's signature at the start: not a MATLAB v7.3 file (its text first) */
  static const uint8_t signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  uint8_t head[8];
  if (file_head(path, head, sizeof head) == sizeof head && !memcmp(head, signature, sizeof head))
    s = nle__read_hdf5(ctx, path, inner, opts, NLE__READ_SHARE, out);
  if (!s && *out && (s = nle__dataset_rename(ctx, *out, source))) nle_dataset_free(out);
  free(file);
  return s;
}

/* A folder of 10x Genomics files: its matrix.mtx[.gz], features x cells,
 * read with the cells as points. */
static nle_status read_10x(nle_ctx *ctx, const char *dir, const nle_read_opts *opts, nle_dataset **out) {
  static const char *const names[] = {"matrix.mtx", "matrix.mtx.gz"};
  char path[4096];
  struct stat st;
  for (size_t i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    nle_read_opts flipped;
    if (opts) flipped = *opts;
    else nle_read_opts_init(&flipped);
    flipped.transpose = !flipped.transpose;
    uint8_t *buf;
    size_t len;
    nle_status s = nle__read_file(ctx, path, &buf, &len);
    if (s) return s;
    if (!(nle__gzip_magic(buf, len) || readers[READER_mtx].magic(buf, len)))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: not a Matrix Market file (no %%%%MatrixMarket header)", path);
    else
      s = nle__parse_buffer(ctx, path, buf, len, &flipped, 0, out);
    free(buf);
    /* the dataset is named as the source was */
    if (!s) s = nle__dataset_rename(ctx, *out, dir);
    if (s) nle_dataset_free(out);
    return s;
  }
  return nle__fail(ctx, NLE_ERR_IO, "%s: a folder, and not one of 10x Genomics data (no matrix.mtx or matrix.mtx.gz in it)",
                   dir);
}

/* A file named as a reader's (readers.def's NLE_READER_NAMED): refused as
 * damaged or misnamed when its first bytes are not that reader's, or
 * *forced, that reader, to parse it whatever they are. A gzip'ed file is
 * judged once inflated. */
static nle_status check_named_format(nle_ctx *ctx, const char *path, const nle__reader **forced) {
  *forced = NULL;
  char ext[16];
  nle__path_ext(path, ext, sizeof ext);
  uint8_t head[HEAD_BYTES];
  size_t got = file_head(path, head, sizeof head);
  for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
    if (strcmp(ext, named[i].ext)) continue;
    const nle__reader *r = &readers[named[i].reader];
    if (!named[i].what) *forced = r;
    else if (got && !nle__gzip_magic(head, got) && !r->magic(head, got))
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: not %s: damaged or misnamed?", path, named[i].what);
  }
  return NLE_OK;
}

/* A plain file by path: its reader's path entry when that reader has one
 * (a .npy read in chunks), else read whole and parsed. */
static nle_status read_file_source(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out) {
  uint8_t head[HEAD_BYTES];
  size_t got = file_head(source, head, sizeof head);
  const char *refused;
  const nle__reader *r = nle__gzip_magic(head, got) ? NULL : plain_reader(head, got, &refused);
  nle_status s = r ? r->read(ctx, source, NULL, opts, 0, out) : NLE_OK;
  if (s || *out) return s;
  const nle__reader *forced;
  s = check_named_format(ctx, source, &forced);
  if (s) return s;
  uint8_t *buf;
  size_t len;
  s = nle__read_file(ctx, source, &buf, &len);
  if (s) return s;
  /* The content decides the format, but a file named as a reader's that
   * does not start like one may be parsed by it (a damaged .npy is not
   * text to be parsed as numbers). */
  if (forced && !nle__gzip_magic(buf, len)) s = forced->parse(ctx, source, buf, len, NULL, opts, 0, out);
  else s = nle__parse_buffer(ctx, source, buf, len, opts, 0, out);
  free(buf);
  return s;
}

static nle_status read_any(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out) {
  nle_status s;
  if (nle__dataset_builtin(ctx, source, out, &s)) return s;
  struct stat st;
  if (stat(source, &st) == 0 && S_ISDIR(st.st_mode)) return read_10x(ctx, source, opts, out);
  if (foreign_name(source))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: %s is not read", source, foreign_name(source));
  int handled = 0;
  s = nle__read_container(ctx, source, opts, 0, out, &handled);
  if (handled || s) return s;
  return read_file_source(ctx, source, opts, out);
}

nle_status nle_dataset_read(nle_ctx *ctx, const char *source, const nle_read_opts *opts,
                            nle_dataset **out) {
  *out = NULL;
  if (!source || !*source) return nle__fail(ctx, NLE_ERR_ARG, "no input given");
  /* under a communicator: this rank's rows (rows.c) */
  return nle__distributed(ctx) ? nle__read_rows(ctx, source, opts, out) : nle__read_whole(ctx, source, opts, out);
}

nle_status nle__read_whole(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out) {
  nle_status s = read_any(ctx, source, opts, out);
  if (s) return s;
  if ((*out)->X && (*out)->X->cols == 0) {
    nle_dataset_free(out);
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: no data columns (only labels)", source);
  }
  return NLE_OK;
}
