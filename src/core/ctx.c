/* ctx.c — the context: threads, seed, verbosity, memory cap, callbacks, and
 * the last error. */
#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <cblas.h>

const char *nle_version(void) { return NLE_VERSION_STRING; }

nle_ctx *nle_ctx_new(void) {
  nle_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->seed = 1;
  return ctx;
}

void nle__outputs_discard(nle_ctx *ctx) {
  for (size_t i = 0; i < ctx->staged_count; i++) {
    if (ctx->staged[i].tmp[0]) unlink(ctx->staged[i].tmp);
    free(ctx->staged[i].tmp);
    free(ctx->staged[i].final);
  }
  free(ctx->staged);
  ctx->staged = NULL;
  ctx->staged_count = ctx->staged_cap = 0;
  ctx->outputs_open = 0;
}

void nle_ctx_free(nle_ctx **ctx) {
  if (!ctx || !*ctx) return;
  nle__outputs_discard(*ctx); /* an uncommitted transaction leaves nothing */
  nle__comm_release(*ctx);
  free(*ctx);
  *ctx = NULL;
}

void nle_ctx_set_threads(nle_ctx *ctx, int threads) { ctx->threads = threads < 0 ? 0 : threads; }

int nle_ctx_threads(const nle_ctx *ctx) {
  if (ctx && ctx->threads > 0) return ctx->threads;
#ifdef _OPENMP
  return omp_get_num_procs();
#else
  return 1;
#endif
}

void nle_ctx_set_seed(nle_ctx *ctx, uint64_t seed) { ctx->seed = seed; }
uint64_t nle_ctx_seed(const nle_ctx *ctx) { return ctx->seed; }
void nle_ctx_set_verbosity(nle_ctx *ctx, int v) { ctx->verbosity = v; }
int nle_ctx_verbosity(const nle_ctx *ctx) { return ctx->verbosity; }
void nle_ctx_set_max_memory(nle_ctx *ctx, size_t bytes) { ctx->max_memory = bytes; }
size_t nle_ctx_max_memory(const nle_ctx *ctx) { return nle__memory_cap(ctx); }

void nle_ctx_set_progress(nle_ctx *ctx, nle_progress_fn fn, void *user) {
  ctx->progress = fn;
  ctx->progress_user = user;
}

void nle_ctx_set_log(nle_ctx *ctx, nle_log_fn fn, void *user) {
  ctx->log = fn;
  ctx->log_user = user;
}

const char *nle_ctx_error(const nle_ctx *ctx) { return ctx ? ctx->error : ""; }
nle_status nle_ctx_last_status(const nle_ctx *ctx) { return ctx ? ctx->last_status : NLE_OK; }

/* Length of the well-formed UTF-8 sequence at p (0 if none), so that a file
 * name in any script passes unchanged while stray binary bytes do not. */
static size_t utf8_sequence(const unsigned char *p) {
  int n = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
  if (p[0] >= 0xF5) return 0;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  return (size_t)n;
}

/* Messages quote bytes read from files (a damaged name, a field that is not
 * a number); written raw to a terminal, control bytes and broken UTF-8 would
 * act on it. Every message and log line is made printable here, as \xNN. */
nle__value_text nle__int_text(int v) {
  nle__value_text t;
  if (v == NLE_AUTO) snprintf(t.s, sizeof t.s, "auto");
  else snprintf(t.s, sizeof t.s, "%d", v);
  return t;
}

nle__value_text nle__real_text(double v) {
  nle__value_text t;
  if (v == (double)NLE_AUTO) snprintf(t.s, sizeof t.s, "auto");
  else snprintf(t.s, sizeof t.s, "%g", v);
  return t;
}

void nle__printable(const char *in, char *out, size_t cap) {
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)in;
  while (*p && o + 1 < cap) {
    size_t seq = *p >= 0x80 ? utf8_sequence(p) : 0;
    if (seq) {
      if (o + seq >= cap) break;
      memcpy(out + o, p, seq);
      o += seq;
      p += seq;
    } else if ((*p >= 0x20 && *p < 0x7f) || *p == '\n') {
      out[o++] = (char)*p++;
    } else {
      if (o + 4 >= cap) break;
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p++);
    }
  }
  out[o] = '\0';
}

/* One marker {@name} or {@name=value} at in (after "{@"): its name and
 * value spans, and the length of the whole marker; 0 when in does not hold
 * one (a file name with "{@" in it is left as it is). */
static size_t marker_at(const char *in, size_t *name_len, const char **value, size_t *value_len) {
  size_t n = 2;
  while ((in[n] >= 'a' && in[n] <= 'z') || (in[n] >= '0' && in[n] <= '9') || in[n] == '-' || in[n] == '_') n++;
  *name_len = n - 2;
  if (!*name_len) return 0;
  *value = NULL;
  *value_len = 0;
  if (in[n] == '=') {
    *value = in + n + 1;
    while (in[n] && in[n] != '}' && in[n] != '{') n++;
    *value_len = (size_t)(in + n - *value);
  }
  return in[n] == '}' ? n + 1 : 0;
}

void nle__spell_options(const char *in, nle_option_spelling spelling, char *out, size_t cap) {
  size_t o = 0;
  if (!cap) return;
  while (*in && o + 1 < cap) {
    size_t name_len, value_len, len = 0;
    const char *value;
    if (in[0] == '{' && in[1] == '@' && spelling != NLE_SPELL_MARKED)
      len = marker_at(in, &name_len, &value, &value_len);
    if (!len) {
      out[o++] = *in++;
      continue;
    }
    char name[64];
    size_t n = name_len < sizeof name - 1 ? name_len : sizeof name - 1;
    memcpy(name, in + 2, n);
    name[n] = '\0';
    int w;
    if (spelling == NLE_SPELL_CLI)
      w = snprintf(out + o, cap - o, value ? "%s%s %.*s" : "%s%s", n == 1 ? "-" : "--", name, (int)value_len,
                   value ? value : "");
    else {
      for (char *c = name; *c; c++)
        if (*c == '-') *c = '_';
      w = snprintf(out + o, cap - o, value ? "%s=%.*s" : "%s", name, (int)value_len, value ? value : "");
    }
    if (w < 0 || (size_t)w >= cap - o) break;
    o += (size_t)w;
    in += len;
  }
  out[o] = '\0';
}

static void set_error(nle_ctx *ctx, const char *raw) {
  char spelled[NLE__ERROR_LEN];
  nle__spell_options(raw, ctx->spelling, spelled, sizeof spelled);
  nle__printable(spelled, ctx->error, sizeof ctx->error);
}

void nle_ctx_set_option_spelling(nle_ctx *ctx, nle_option_spelling spelling) {
  if (ctx && (unsigned)spelling < NLE_SPELL_COUNT) ctx->spelling = spelling;
}

int nle_ctx_warning_count(const nle_ctx *ctx) { return ctx ? ctx->warning_count : 0; }

const char *nle_ctx_warning(const nle_ctx *ctx, int i, nle_warning_kind *kind) {
  if (!ctx || i < 0 || i >= ctx->warning_count || i >= NLE_WARNINGS_KEPT) return "";
  if (kind) *kind = ctx->warnings[i].kind;
  return ctx->warnings[i].text;
}

void nle_ctx_clear_warnings(nle_ctx *ctx) {
  if (ctx) ctx->warning_count = 0;
}

void nle__warn(nle_ctx *ctx, nle_warning_kind kind, const char *fmt, ...) {
  if (!ctx) return;
  char raw[512], spelled[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  nle__spell_options(raw, ctx->spelling, spelled, sizeof spelled);
  if (ctx->warning_count < NLE_WARNINGS_KEPT) {
    struct nle__warning *w = &ctx->warnings[ctx->warning_count];
    w->kind = kind;
    nle__printable(spelled, w->text, sizeof w->text);
  }
  ctx->warning_count++;
  if (ctx->log && ctx->verbosity >= 0) {
    char line[sizeof raw + 16], shown[sizeof line];
    snprintf(line, sizeof line, "warning: %s", spelled);
    nle__printable(line, shown, sizeof shown);
    ctx->log(ctx->log_user, 0, shown);
  }
}

nle_status nle__fail(nle_ctx *ctx, nle_status s, const char *fmt, ...) {
  if (!ctx) return s;
  char raw[NLE__ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  set_error(ctx, raw);
  ctx->last_status = s;
  return s;
}

nle_status nle__fail_prefix(nle_ctx *ctx, const char *prefix) {
  if (!ctx) return NLE_ERR_ARG;
  char joined[2 * NLE__ERROR_LEN + 8];
  snprintf(joined, sizeof joined, "%s: %s", prefix, ctx->error);
  joined[NLE__ERROR_LEN - 1] = '\0';
  set_error(ctx, joined);
  return ctx->last_status;
}

nle_status nle__name_error(nle_ctx *ctx, const char *name) {
  if (!ctx) return NLE_ERR_ARG;
  size_t len = strlen(name);
  if (strncmp(ctx->error, name, len) != 0 || ctx->error[len] != ':') nle__fail_prefix(ctx, name);
  return ctx->last_status;
}

nle_status nle__fail_suffix(nle_ctx *ctx, const char *suffix) {
  if (!ctx) return NLE_ERR_ARG;
  char joined[2 * NLE__ERROR_LEN + 8];
  snprintf(joined, sizeof joined, "%s%s", ctx->error, suffix);
  joined[NLE__ERROR_LEN - 1] = '\0';
  set_error(ctx, joined);
  return ctx->last_status;
}

void nle__clear_error(nle_ctx *ctx) {
  if (!ctx) return;
  ctx->error[0] = '\0';
  ctx->last_status = NLE_OK;
}

void nle__log(nle_ctx *ctx, int level, const char *fmt, ...) {
  if (!ctx || !ctx->log || level > ctx->verbosity) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  char spelled[sizeof line], shown[sizeof line];
  nle__spell_options(line, ctx->spelling, spelled, sizeof spelled);
  nle__printable(spelled, shown, sizeof shown);
  ctx->log(ctx->log_user, level, shown);
}

size_t nle__memory_cap(const nle_ctx *ctx) {
  if (ctx && ctx->max_memory) return ctx->max_memory;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return (size_t)8 << 30;
  return (size_t)((double)pages * (double)page * 0.8);
}

const char *nle__format_bytes(double bytes, char *buf, size_t len) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
  return buf;
}

nle_status nle__check_memory(nle_ctx *ctx, double bytes, const char *what) {
  size_t cap = nle__memory_cap(ctx);
  if (bytes <= (double)cap) return NLE_OK;
  char need[32], have[32];
  return nle__fail(ctx, NLE_ERR_MEMCAP, "%s needs %s, over the memory cap of %s", what,
                   nle__format_bytes(bytes, need, sizeof need),
                   nle__format_bytes((double)cap, have, sizeof have));
}

void *nle__malloc(nle_ctx *ctx, size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    char b[32];
    nle__fail(ctx, NLE_ERR_NOMEM, "out of memory allocating %s for %s",
              nle__format_bytes((double)bytes, b, sizeof b), what);
  }
  return p;
}

void *nle__malloc_huge(size_t bytes) {
  enum { HUGE_PAGE = 2 << 20 };
  void *p = NULL;
  if (bytes >= HUGE_PAGE) {
    bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, bytes)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: a kernel without THP keeps small pages */
#endif
  } else if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
    return NULL;
  }
  return p;
}

void *nle__calloc(nle_ctx *ctx, size_t count, size_t size, const char *what) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) {
    char b[32];
    nle__fail(ctx, NLE_ERR_NOMEM, "out of memory allocating %s for %s",
              nle__format_bytes((double)count * (double)size, b, sizeof b), what);
  }
  return p;
}

static nle_status report(nle_ctx *ctx, const char *stage, double fraction) {
  if (ctx->progress(ctx->progress_user, stage, fraction))
    return nle__fail(ctx, NLE_ERR_CANCELLED, "%s: cancelled", stage);
  return NLE_OK;
}

nle_status nle__progress(nle_ctx *ctx, const char *stage, double fraction) {
  if (!ctx || !ctx->progress) return NLE_OK;
  if (!ctx->frame_stage) return report(ctx, stage, fraction);
  double f = ctx->frame_lo + (ctx->frame_hi - ctx->frame_lo) * fraction;
  if (f > ctx->frame_fraction) ctx->frame_fraction = f;
  return report(ctx, ctx->frame_stage, ctx->frame_fraction);
}

int nle__progress_check(const nle_ctx *ctx, const char *stage, double fraction) {
  if (!ctx || !ctx->progress) return 0;
  return ctx->frame_stage ? ctx->progress(ctx->progress_user, ctx->frame_stage, ctx->frame_fraction)
                          : ctx->progress(ctx->progress_user, stage, fraction);
}

nle_status nle__progress_inner(nle_ctx *ctx, const char *stage, double fraction) {
  if (nle__progress_check(ctx, stage, fraction))
    return nle__fail(ctx, NLE_ERR_CANCELLED, "%s: cancelled", ctx->frame_stage ? ctx->frame_stage : stage);
  return NLE_OK;
}

bool nle__stage_begin(nle_ctx *ctx, const char *stage) {
  if (!ctx || ctx->frame_stage) return false;
  ctx->frame_stage = stage;
  ctx->frame_lo = ctx->frame_fraction = 0.0;
  ctx->frame_hi = 1.0;
  return true;
}

void nle__stage_end(nle_ctx *ctx, bool opened) {
  if (ctx && opened) ctx->frame_stage = NULL;
}

void nle__stage_range(nle_ctx *ctx, double lo, double hi) {
  if (!ctx || !ctx->frame_stage) return;
  ctx->frame_lo = lo;
  ctx->frame_hi = hi;
}

int nle__threads_for(const nle_ctx *ctx, double work) {
  /* Below ~1e5 operations the fork/join costs more than it saves. */
  if (work < 1e5) return 1;
  return nle_ctx_threads(ctx);
}

int nle__blas_set_threads(int threads) {
  int previous = openblas_get_num_threads();
  openblas_set_num_threads(threads < 1 ? 1 : threads);
  return previous;
}
