/* test_api.c — promises the public header's opening comment makes about
 * every call, checked across the stages: a NULL options pointer means the
 * defaults (the same bits as the options from their _init). */
#include "harness.h"
#include "nle_common.h"

#include <stdlib.h>
#include <string.h>

static int same_csr(const nle_csr *a, const nle_csr *b) {
  size_t value = a->dtype == NLE_F64 ? sizeof(double) : sizeof(float);
  return a && b && a->rows == b->rows && a->cols == b->cols && a->nnz == b->nnz && a->dtype == b->dtype &&
         !memcmp(a->rowptr, b->rowptr, (size_t)(a->rows + 1) * sizeof(int64_t)) &&
         !memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof(int32_t)) &&
         !memcmp(a->val, b->val, (size_t)a->nnz * value);
}

static int same_matd(const nle_matd *a, const nle_matd *b) {
  return a && b && a->rows == b->rows && a->cols == b->cols &&
         !memcmp(a->data, b->data, a->rows * a->cols * sizeof(double));
}

/* Each stage's calls with NULL options and with their _init's, in turn. */
static void null_options_are_defaults(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = test_random_matf(300, 6, 11);

  const char text[] = "1,2,3\n4,5,6\n7,8,10\n";
  nle_read_opts ro;
  nle_read_opts_init(&ro);
  nle_dataset *d0 = NULL, *d1 = NULL;
  nle_test_ok(nle_parse_text(ctx, "inline", text, sizeof text - 1, NULL, &d0));
  nle_test_ok(nle_parse_text(ctx, "inline", text, sizeof text - 1, &ro, &d1));
  nle_test(d0 && d1 && d0->X->rows == 3 && d1->X->rows == 3 &&
           !memcmp(d0->X->data, d1->X->data, 9 * sizeof(float)));
  nle_dataset_free(&d0);
  nle_dataset_free(&d1);

  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  nle_csr *k0 = NULL, *k1 = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, NULL, &k0));
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &k1));
  nle_test(same_csr(k0, k1) && k0->nnz == 300 * (int64_t)ko.k);
  nle_csr_free(&k1);
  nle_knn_approx_opts ao;
  nle_knn_approx_opts_init(&ao);
  nle_csr *a0 = NULL, *a1 = NULL;
  nle_test_ok(nle_knn_approx(ctx, Y, NULL, &a0));
  nle_test_ok(nle_knn_approx(ctx, Y, &ao, &a1));
  nle_test(same_csr(a0, a1));
  nle_csr_free(&a0);
  nle_csr_free(&a1);

  /* the default perplexity (30) needs more than the default 10 neighbours */
  nle_csr_free(&k0);
  ko.k = 90;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &k0));
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  nle_ea_result *e0 = NULL, *e1 = NULL;
  nle_test_ok(nle_entropic_affinities(ctx, k0, NULL, &e0));
  nle_test_ok(nle_entropic_affinities(ctx, k0, &eo, &e1));
  nle_test(e0 && e1 && same_csr(e0->P, e1->P) && !memcmp(e0->beta, e1->beta, 300 * sizeof(double)));
  nle_affinity_opts gop;
  nle_affinity_opts_init(&gop);
  nle_csr *g0 = NULL, *g1 = NULL;
  nle_test_ok(nle_affinity_graph(ctx, k0, NULL, &g0));
  nle_test_ok(nle_affinity_graph(ctx, k0, &gop, &g1));
  nle_test(same_csr(g0, g1));
  nle_csr_free(&g0);
  nle_csr_free(&g1);

  nle_pca_opts po;
  nle_pca_opts_init(&po);
  nle_pca_model *p0 = NULL, *p1 = NULL;
  nle_test_ok(nle_pca_fit(ctx, Y, NULL, &p0));
  nle_test_ok(nle_pca_fit(ctx, Y, &po, &p1));
  nle_test(p0 && p1 && p0->n_components == p1->n_components &&
           !memcmp(p0->components, p1->components, (size_t)p0->n_components * 6 * sizeof(double)));
  nle_pca_model_free(&p0);
  nle_pca_model_free(&p1);

  /* A model and an optimiser on the entropic P; the homotopy from the same
   * start, NULL and default options. */
  nle_csr *W = NULL;
  nle_test_ok(nle_affinity_symmetrize(ctx, e0->P, false, &W));
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, 1.0, W);
  nle_model *m = NULL;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  nle_homotopy_opts ho;
  nle_homotopy_opts_init(&ho);
  nle_matd *X[2] = {random_x(300, 2, 1e-3, 12), random_x(300, 2, 1e-3, 12)};
  for (int r = 0; r < 2; r++) {
    nle_opt *opt = NULL;
    nle_opt_report rep;
    nle_test_ok(nle_opt_new(ctx, m, W, r ? &oo : NULL, &opt));
    nle_test(nle_homotopy_run(ctx, m, opt, X[r], r ? &ho : NULL, NULL, NULL, &rep) >= 0);
    nle_opt_free(&opt);
  }
  nle_test(same_matd(X[0], X[1]));

  nle_metrics_opts mo;
  nle_metrics_opts_init(&mo);
  nle_metrics *m0 = NULL, *m1 = NULL;
  nle_test_ok(nle_metrics_compute(ctx, Y, X[0], NULL, NULL, &m0));
  nle_test_ok(nle_metrics_compute(ctx, Y, X[0], NULL, &mo, &m1));
  nle_test(m0 && m1 && m0->recall == m1->recall && m0->trustworthiness == m1->trustworthiness);
  nle_metrics_free(&m0);
  nle_metrics_free(&m1);

  nle_oos_opts so;
  nle_oos_opts_init(&so);
  nle_matd *f0 = NULL, *f1 = NULL;
  nle_test_ok(nle_ee_map_forward(ctx, Y, X[0], Y, NULL, &f0));
  nle_test_ok(nle_ee_map_forward(ctx, Y, X[0], Y, &so, &f1));
  nle_test(same_matd(f0, f1));
  nle_matd_free(&f0);
  nle_matd_free(&f1);

  double S[2][300];
  nle_fft_opts fo;
  nle_fft_opts_init(&fo);
  nle_test_ok(nle_kernel_sums_fft(ctx, X[0], NLE_KERNEL_STUDENT, NULL, S[0], NULL));
  nle_test_ok(nle_kernel_sums_fft(ctx, X[0], NLE_KERNEL_STUDENT, &fo, S[1], NULL));
  nle_test(!memcmp(S[0], S[1], sizeof S[0]));
  nle_fgt_opts go;
  nle_fgt_opts_init(&go);
  nle_test_ok(nle_kernel_sums_fgt(ctx, X[0], NULL, S[0], NULL));
  nle_test_ok(nle_kernel_sums_fgt(ctx, X[0], &go, S[1], NULL));
  nle_test(!memcmp(S[0], S[1], sizeof S[0]));

  nle_embed_input in;
  memset(&in, 0, sizeof in);
  in.Y = Y;
  nle_embed_opts emo;
  nle_embed_opts_init(&emo);
  nle_embed_result *r0 = NULL, *r1 = NULL;
  /* a warning (>= 0) when the fixed 450 iterations end before convergence */
  nle_test(nle_embed(ctx, &in, NULL, &r0) >= 0);
  nle_test(nle_embed(ctx, &in, &emo, &r1) >= 0);
  nle_test(r0 && r1 && same_matd(r0->X, r1->X));
  nle_embed_result_free(&r0);
  nle_embed_result_free(&r1);

  nle_matd_free(&X[0]);
  nle_matd_free(&X[1]);
  nle_model_free(&m);
  nle_csr_free(&W);
  nle_ea_result_free(&e0);
  nle_ea_result_free(&e1);
  nle_csr_free(&k0);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

const nle_test_case api_tests[] = {
    {"api/null_options_are_defaults", null_options_are_defaults},
    {NULL, NULL}};
