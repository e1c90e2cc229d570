/* atomic.c — output files written under a temporary name and renamed into
 * place only when complete; output transactions that rename all of a run's
 * files only when the whole run succeeded; the removal of temporaries left
 * by runs that died; the output-path check done before long work.
 *
 * A temporary is named .NAME.tmp.PID.XXXXXX beside NAME: the PID of the
 * writing process makes the leftovers of a killed run recognisable (no
 * process of that id) to the next run writing in that folder. */
#include "io_internal.h"
#include "../core/comm.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
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

/* The writer's PID in a temporary's name .NAME.tmp.PID.XXXXXX, or -1. */
static long temporary_owner(const char *name) {
  size_t len = strlen(name);
  if (name[0] != '.' || len < 6 + 1) return -1;
  const char *suffix = name + len - 7; /* ".XXXXXX" */
  if (*suffix != '.') return -1;
  const char *tag = NULL;
  for (const char *p = strstr(name, ".tmp."); p && p < suffix; p = strstr(p + 1, ".tmp.")) tag = p;
  if (!tag || tag == name) return -1;
  char *end;
  long pid = strtol(tag + 5, &end, 10);
  return end == suffix && pid > 0 ? pid : -1;
}

/* Removes the temporaries in `dir` whose writing process is gone. */
static void remove_dead_temporaries(nle_ctx *ctx, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long pid = temporary_owner(e->d_name);
    if (pid < 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *path = malloc(len);
    if (!path) break;
    snprintf(path, len, "%s/%s", dir, e->d_name);
    if (unlink(path) == 0) nle__log(ctx, 0, "note: removed %s, left by a run that died (process %ld)", path, pid);
    free(path);
  }
  closedir(d);
}

nle_status nle_check_output(nle_ctx *ctx, const char *path, unsigned formats) {
  nle_status s = nle_check_output_path(ctx, path);
  if (s || !formats) return s;
  static const struct {
    unsigned format;
    const char *ext;
  } known[] = {{NLE_OUTPUT_DENSE, ".npy"}, {NLE_OUTPUT_DENSE, ".csv"}, {NLE_OUTPUT_DENSE, ".tsv"},
               {NLE_OUTPUT_DENSE, ".txt"}, {NLE_OUTPUT_MTX, ".mtx"},   {NLE_OUTPUT_IMAGE, ".png"},
               {NLE_OUTPUT_IMAGE, ".svg"}};
  char ext[16], accepted[64] = "";
  nle__path_ext(path, ext, sizeof ext);
  size_t n_known = sizeof known / sizeof *known, last = 0;
  for (size_t i = 0; i < n_known; i++) {
    if (!(known[i].format & formats)) continue;
    if (!strcmp(ext, known[i].ext)) return NLE_OK;
    last = i;
  }
  for (size_t i = 0; i < n_known; i++) {
    if (!(known[i].format & formats)) continue;
    const char *sep = !accepted[0] ? "" : i == last ? " or " : ", ";
    strncat(accepted, sep, sizeof accepted - strlen(accepted) - 1);
    strncat(accepted, known[i].ext, sizeof accepted - strlen(accepted) - 1);
  }
  return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: unknown output extension \"%s\" (use %s)", path, ext, accepted);
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
  remove_dead_temporaries(ctx, dir);
  size_t len = strlen(dir) + strlen(base) + 48;
  af->tmp_path = malloc(len);
  af->final_path = strdup(path);
  if (af->tmp_path) snprintf(af->tmp_path, len, "%s/.%s.tmp.%ld.XXXXXX", dir, base, (long)getpid());
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

/* Hands a completed temporary to the open transaction; a second file for
 * the same path replaces the first. */
static nle_status stage(nle_ctx *ctx, nle__afile *af) {
  for (size_t i = 0; i < ctx->staged_count; i++)
    if (!strcmp(ctx->staged[i].final, af->final_path)) {
      unlink(ctx->staged[i].tmp);
      free(ctx->staged[i].tmp);
      free(ctx->staged[i].final);
      ctx->staged[i] = ctx->staged[--ctx->staged_count];
      break;
    }
  if (ctx->staged_count == ctx->staged_cap) {
    size_t cap = ctx->staged_cap ? 2 * ctx->staged_cap : 8;
    struct nle__staged_file *grown = realloc(ctx->staged, cap * sizeof *grown);
    if (!grown) {
      nle__afile_abort(af);
      return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory staging an output");
    }
    ctx->staged = grown;
    ctx->staged_cap = cap;
  }
  ctx->staged[ctx->staged_count++] = (struct nle__staged_file){af->tmp_path, af->final_path};
  memset(af, 0, sizeof *af);
  return NLE_OK;
}

nle_status nle__afile_commit(nle_ctx *ctx, nle__afile *af) {
  int failed = ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
  int err = errno;
  if (fclose(af->f) != 0 && !failed) {
    failed = 1;
    err = errno;
  }
  af->f = NULL;
  if (failed) {
    nle_status s = nle__fail(ctx, NLE_ERR_IO, "%s: write failed: %s", af->final_path, strerror(err));
    nle__afile_abort(af);
    return s;
  }
  if (ctx && ctx->outputs_open && !af->immediate) return stage(ctx, af);
  if (rename(af->tmp_path, af->final_path) != 0) {
    nle_status s = nle__fail(ctx, NLE_ERR_IO, "%s: write failed: %s", af->final_path, strerror(errno));
    nle__afile_abort(af);
    return s;
  }
  free(af->tmp_path);
  free(af->final_path);
  memset(af, 0, sizeof *af);
  return NLE_OK;
}

nle_status nle_outputs_begin(nle_ctx *ctx) {
  if (ctx->outputs_open) return nle__fail(ctx, NLE_ERR_ARG, "an output transaction is already open");
  ctx->outputs_open = 1;
  return NLE_OK;
}

/* Under a communicator rank 0 holds the staged files (rows.c) and every
 * rank learns whether they were put in place. */
nle_status nle_outputs_commit(nle_ctx *ctx) {
  if (!ctx->outputs_open) return nle__comm_agree(ctx, NLE_OK);
  nle_status s = NLE_OK;
  for (size_t i = 0; i < ctx->staged_count && !s; i++) {
    if (rename(ctx->staged[i].tmp, ctx->staged[i].final) != 0)
      s = nle__fail(ctx, NLE_ERR_IO, "%s: cannot put the output in place: %s", ctx->staged[i].final, strerror(errno));
    else
      ctx->staged[i].tmp[0] = '\0'; /* in place: nothing to remove */
  }
  nle__outputs_discard(ctx); /* after a failed rename, removes the rest */
  return nle__comm_agree(ctx, s);
}

void nle_outputs_abort(nle_ctx *ctx) { nle__outputs_discard(ctx); }

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

struct nle_output {
  nle__afile af;
};

nle_status nle_output_open(nle_ctx *ctx, const char *path, nle_output **out) {
  *out = nle__calloc(ctx, 1, sizeof **out, "an output");
  if (!*out) return NLE_ERR_NOMEM;
  nle_status s = nle__afile_open(ctx, path, &(*out)->af);
  if (s) {
    free(*out);
    *out = NULL;
  }
  return s;
}

FILE *nle_output_stream(nle_output *out) { return out ? out->af.f : NULL; }

nle_status nle_output_close(nle_ctx *ctx, nle_output **out) {
  if (!out || !*out) return NLE_OK;
  nle_status s = nle__afile_commit(ctx, &(*out)->af);
  free(*out);
  *out = NULL;
  return s;
}

void nle_output_abort(nle_output **out) {
  if (!out || !*out) return;
  nle__afile_abort(&(*out)->af);
  free(*out);
  *out = NULL;
}
