/* test_core.c — context, status codes, RNG, dense and CSR matrices. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static void rng_reproducible(void) {
  nle_rng a, b, c;
  nle_rng_init(&a, 42, 3);
  nle_rng_init(&b, 42, 3);
  nle_rng_init(&c, 42, 4);
  int same = 1, differ = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = nle_rng_u64(&a), y = nle_rng_u64(&b), z = nle_rng_u64(&c);
    same &= x == y;
    differ += x != z;
  }
  nle_test(same);
  nle_test(differ > 990);
}

static void rng_distributions(void) {
  nle_rng r;
  nle_rng_init(&r, 1, 0);
  double sum = 0, sq = 0, umin = 1, umax = 0;
  int n = 200000, counts[10] = {0};
  for (int i = 0; i < n; i++) {
    double z = nle_rng_normal(&r), u = nle_rng_uniform(&r);
    sum += z;
    sq += z * z;
    umin = fmin(umin, u);
    umax = fmax(umax, u);
    counts[nle_rng_below(&r, 10)]++;
  }
  nle_test(fabs(sum / n) < 0.01);
  nle_test(fabs(sq / n - 1.0) < 0.02);
  nle_test(umin >= 0.0 && umax < 1.0);
  for (int i = 0; i < 10; i++) nle_test(abs(counts[i] - n / 10) < 600); /* ~4.5 sigma */
}

static void rng_sample_and_shuffle(void) {
  nle_rng r;
  nle_rng_init(&r, 9, 0);
  int64_t s[50];
  nle_rng_sample(&r, 1000, 50, s);
  int sorted = 1;
  for (int i = 1; i < 50; i++) sorted &= s[i] > s[i - 1];
  nle_test(sorted && s[0] >= 0 && s[49] < 1000);
  nle_rng_sample(&r, 7, 7, s);
  for (int i = 0; i < 7; i++) nle_test(s[i] == i);
  int64_t p[100], seen[100] = {0};
  for (int i = 0; i < 100; i++) p[i] = i;
  nle_rng_shuffle(&r, p, 100);
  int moved = 0;
  for (int i = 0; i < 100; i++) {
    seen[p[i]]++;
    moved += p[i] != i;
  }
  for (int i = 0; i < 100; i++) nle_test(seen[i] == 1);
  nle_test(moved > 80);
}

static void status_names(void) {
  nle_test(!strcmp(nle_status_name(NLE_ERR_FORMAT), "ERR_FORMAT"));
  nle_test(!strcmp(nle_status_name(NLE_OK), "OK"));
  nle_test(!strcmp(nle_status_name((nle_status)12345), "UNKNOWN"));
  nle_test(strlen(nle_status_message(NLE_ERR_MEMCAP)) > 5);
}

static void memory_cap(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_ctx_set_max_memory(ctx, 1 << 20);
  nle_matf *m = NULL;
  nle_test(nle_matf_alloc(ctx, 1000, 1000, &m) == NLE_ERR_MEMCAP);
  nle_test(m == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "memory cap of 1.0 MiB") != NULL);
  nle_test(strstr(nle_ctx_error(ctx), "1000 x 1000") != NULL);
  nle_test_ok(nle_matf_alloc(ctx, 100, 100, &m));
  nle_matf_free(&m);
  nle_test(m == NULL);
  nle_matf_free(&m); /* freeing NULL is fine */
  nle_ctx_free(&ctx);
  nle_test(ctx == NULL);
}

static void dense_select(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *a, *b;
  nle_test_ok(nle_matd_alloc(ctx, 4, 3, &a));
  for (int i = 0; i < 12; i++) a->data[i] = i;
  int64_t idx[2] = {3, 1};
  nle_test_ok(nle_matd_select_rows(ctx, a, idx, 2, &b));
  nle_test(b->data[0] == 9 && b->data[2] == 11 && b->data[3] == 3);
  int64_t bad[1] = {4};
  nle_matd *c = NULL;
  nle_test(nle_matd_select_rows(ctx, a, bad, 1, &c) == NLE_ERR_ARG);
  nle_matd_free(&a);
  nle_matd_free(&b);
  nle_ctx_free(&ctx);
}

/* A random sparse matrix against its dense copy. */
static void csr_transpose(void) {
  nle_ctx *ctx = test_ctx(1);
  int rows = 17, cols = 11;
  double dense[17][11] = {{0}};
  nle_rng r;
  nle_rng_init(&r, 5, 0);
  int64_t nnz = 0;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++)
      if (nle_rng_uniform(&r) < 0.3) {
        dense[i][j] = nle_rng_normal(&r);
        nnz++;
      }
  nle_csr *m, *t, *tt;
  nle_test_ok(nle_csr_alloc(ctx, rows, cols, nnz, NLE_F64, &m));
  int64_t k = 0;
  for (int i = 0; i < rows; i++) {
    for (int j = 0; j < cols; j++)
      if (dense[i][j] != 0) {
        m->colind[k] = j;
        ((double *)m->val)[k++] = dense[i][j];
      }
    m->rowptr[i + 1] = k;
  }
  nle_test_ok(nle_csr_validate(ctx, m));
  nle_test_ok(nle_csr_transpose(ctx, m, &t));
  nle_test(t->rows == cols && t->cols == rows && t->nnz == nnz);
  int match = 1;
  for (int j = 0; j < cols; j++)
    for (int64_t q = t->rowptr[j]; q < t->rowptr[j + 1]; q++) match &= nle_csr_value(t, q) == dense[t->colind[q]][j];
  nle_test(match);
  nle_test_ok(nle_csr_transpose(ctx, t, &tt));
  nle_test(!memcmp(tt->rowptr, m->rowptr, sizeof(int64_t) * (size_t)(rows + 1)));
  nle_test(!memcmp(tt->colind, m->colind, sizeof(int32_t) * (size_t)nnz));
  m->colind[0] = cols; /* out of range */
  nle_test(nle_csr_validate(ctx, m) == NLE_ERR_FORMAT);
  nle_csr_free(&m);
  nle_csr_free(&t);
  nle_csr_free(&tt);
  nle_ctx_free(&ctx);
}

const nle_test_case core_tests[] = {
    {"core/rng_reproducible", rng_reproducible},
    {"core/rng_distributions", rng_distributions},
    {"core/rng_sample_and_shuffle", rng_sample_and_shuffle},
    {"core/status_names", status_names},
    {"core/memory_cap", memory_cap},
    {"core/dense_select", dense_select},
    {"core/csr_transpose", csr_transpose},
    {NULL, NULL}};
