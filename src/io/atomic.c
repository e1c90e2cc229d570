/* atomic.c — output files written under a temporary name and renamed into
 * place only when complete, plus the output-path check done before long work. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

nle_status nle_check_output_path(nle_ctx *ctx, const char *path) {
  if (!path || !*path) return nle__fail(ctx, NLE_ERR_ARG, "empty output path");
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return nle__fail(ctx, NLE_ERR_IO, "%s: output path is a folder", path);
  char *dir = dir_of(path);
  if (!dir) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  nle_status s = NLE_OK;
  if (stat(dir, &st) != 0)
    s = nle__fail(ctx, NLE_ERR_IO, "%s: output folder %s does not exist", path, dir);
  else if (!S_ISDIR(st.st_mode))
    s = nle__fail(ctx, NLE_ERR_IO, "%s: %s is not a folder", path, dir);
  else if (access(dir, W_OK | X_OK) != 0)
    s = nle__fail(ctx, NLE_ERR_IO, "%s: output folder %s is not writable", path, dir);
  free(dir);
  return s;
}

nle_status nle__afile_open(nle_ctx *ctx, const char *path, nle__afile *af) {
  memset(af, 0, sizeof *af);
  nle_status s = nle_check_output_path(ctx, path);
  if (s) return s;
  char *dir = dir_of(path), *copy = strdup(path);
  if (!dir || !copy) {
    free(dir);
    free(copy);
    return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  }
  const char *base = basename(copy);
  size_t len = strlen(dir) + strlen(base) + 32;
  af->tmp_path = malloc(len);
  af->final_path = strdup(path);
  if (af->tmp_path) snprintf(af->tmp_path, len, "%s/.%s.tmp.XXXXXX", dir, base);
  free(dir);
  free(copy);
  if (!af->tmp_path || !af->final_path) {
    nle__afile_abort(af);
    return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  }
  int fd = mkstemp(af->tmp_path);
  if (fd < 0) {
    s = nle__fail(ctx, NLE_ERR_IO, "%s: cannot create a temporary file: %s", path, strerror(errno));
    free(af->tmp_path);
    af->tmp_path = NULL;
    nle__afile_abort(af);
    return s;
  }
  /* mkstemp makes 0600; give the file the permissions a plain fopen would. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  af->f = fdopen(fd, "wb");
  if (!af->f) {
    close(fd);
    nle__afile_abort(af);
    return nle__fail(ctx, NLE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  return NLE_OK;
}

void nle__afile_abort(nle__afile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp_path) unlink(af->tmp_path);
  free(af->tmp_path);
  free(af->final_path);
  memset(af, 0, sizeof *af);
}

nle_status nle__afile_commit(nle_ctx *ctx, nle__afile *af) {
  int failed = ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
  int err = errno;
  if (fclose(af->f) != 0 && !failed) {
    failed = 1;
    err = errno;
  }
  af->f = NULL;
  if (!failed && rename(af->tmp_path, af->final_path) != 0) {
    failed = 1;
    err = errno;
  }
  if (failed) {
    nle_status s = nle__fail(ctx, NLE_ERR_IO, "%s: write failed: %s", af->final_path, strerror(err));
    nle__afile_abort(af);
    return s;
  }
  free(af->tmp_path);
  free(af->final_path);
  memset(af, 0, sizeof *af);
  return NLE_OK;
}

nle_status nle_write_text(nle_ctx *ctx, const char *path, const char *text) {
  nle__afile af;
  nle_status s = nle__afile_open(ctx, path, &af);
  if (s) return s;
  fputs(text, af.f);
  return nle__afile_commit(ctx, &af);
}

const char *nle__path_ext(const char *path, char *buf, size_t len) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash : path, '.');
  if (!dot || len == 0) dot = "";
  size_t i = 0;
  for (; dot[i] && i + 1 < len; i++) buf[i] = (char)((dot[i] >= 'A' && dot[i] <= 'Z') ? dot[i] + 32 : dot[i]);
  if (len) buf[i] = '\0';
  return buf;
}

nle_status nle__read_file(nle_ctx *ctx, const char *path, uint8_t **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return nle__fail(ctx, NLE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
    fclose(f);
    return nle__fail(ctx, NLE_ERR_IO, "%s: not a regular file", path);
  }
  char what[64];
  snprintf(what, sizeof what, "reading the file");
  nle_status s = nle__check_memory(ctx, (double)st.st_size, what);
  if (s) {
    fclose(f);
    return nle__fail_prefix(ctx, path);
  }
  size_t size = (size_t)st.st_size;
  uint8_t *b = nle__malloc(ctx, size + 1, "file contents");
  if (!b) {
    fclose(f);
    return NLE_ERR_NOMEM;
  }
  size_t got = fread(b, 1, size, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != size) {
    free(b);
    return nle__fail(ctx, NLE_ERR_IO, "%s: read error after %zu of %zu bytes", path, got, size);
  }
  b[size] = 0;
  *buf = b;
  *len = size;
  return NLE_OK;
}
