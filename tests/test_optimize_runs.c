/* test_optimize_runs.c — the optimisers over whole runs: E never rises
 * under a line search, clusters come apart, the t-SNE-style fixed-rate
 * descent, and a run cancelled anywhere resumes from its checkpoint to the
 * same bits as an uninterrupted one. (Step by step against the written-out
 * rules: test_optimize.c.) */
#include "harness.h"
#include "nle_common.h"
#include "../src/nle/nle_internal.h"
#include "../src/io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The line search only accepts decreases: E never rises, iteration by
 * iteration, for every optimiser. */
static void monotone_decrease(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(150, 5, 51);
  nle_csr *P = test_entropic_p(ctx, Y, 10);
  nle_model_spec spec = test_model_spec(NLE_MODEL_TSNE, 1.0, P);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  for (int kind = NLE_OPT_SD; kind <= NLE_OPT_SDM; kind++) {
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = (nle_opt_kind)kind;
    oo.max_iters = 1;
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
    nle_matd *X = random_x(150, 2, 1e-2, 52);
    double last = INFINITY;
    int rises = 0;
    for (int it = 0; it < 25; it++) {
      nle_opt_report rep;
      nle_status s = nle_opt_run(ctx, opt, X, &rep);
      nle_test(s >= 0);
      rises += rep.E > last + 1e-12 * fabs(last) || rep.E > rep.E0;
      last = rep.E;
    }
    nle_test(rises == 0);
    /* And within one longer run (history-based directions kept). */
    nle_opt_free(&opt);
    oo.max_iters = 40;
    oo.tol = 0;
    nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
    nle_opt_report rep;
    double e0;
    nle_test_ok(nle_model_eval(ctx, m, X, &e0, NULL));
    nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0 && rep.E <= e0 && rep.iterations > 0);
    nle_matd_free(&X);
    nle_opt_free(&opt);
  }
  nle_model_free(&m);
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* t-SNE and s-SNE with the spectral direction separate well-separated
 * Gaussian clusters: 5-fold 10-NN accuracy on the embedding >= 0.95; and on
 * the same budget of iterations from the same start SD descends at least as
 * deep as FP (t-SNE). */
static void separates_clusters(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "blobs:500:10:5", NULL, &ds));
  nle_csr *P = test_entropic_p(ctx, ds->X, 20);
  nle_model_kind kinds[2] = {NLE_MODEL_TSNE, NLE_MODEL_SSNE};
  for (int c = 0; c < 2; c++) {
    nle_model_spec spec = test_model_spec(kinds[c], 1.0, P);
    nle_model *m;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    double final_e[2];
    for (int kind = NLE_OPT_SD; kind <= NLE_OPT_FP; kind++) {
      nle_opt_opts oo;
      nle_opt_opts_init(&oo);
      oo.kind = (nle_opt_kind)kind;
      oo.max_iters = 150;
      oo.tol = 0; /* a fixed budget, to compare the two */
      nle_opt *opt;
      nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
      nle_matd *X = random_x(500, 2, 1e-2, 61);
      nle_opt_report rep;
      nle_status s = nle_opt_run(ctx, opt, X, &rep);
      nle_test(s >= 0 && rep.E < rep.E0);
      final_e[kind] = rep.E;
      if (kind == NLE_OPT_SD) {
        double acc = 0;
        nle_test_ok(nle_knn_accuracy_cv(ctx, X, ds->labels, 10, 5, &acc));
        if (!nle_test(acc >= 0.95)) printf("  model %d: accuracy %.3f\n", kinds[c], acc);
      }
      nle_matd_free(&X);
      nle_opt_free(&opt);
    }
    if (kinds[c] == NLE_MODEL_TSNE && !nle_test(final_e[NLE_OPT_SD] <= final_e[NLE_OPT_FP]))
      printf("  t-SNE after 150 iterations: SD E = %.6f, FP E = %.6f\n", final_e[NLE_OPT_SD], final_e[NLE_OPT_FP]);
    nle_model_free(&m);
  }
  nle_csr_free(&P);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* Gradient descent as t-SNE users run it: rate max(N/12, 200), momentum,
 * gains, early exaggeration 12 for 100 iterations, then 300 more; the
 * clusters come out separated and E (without exaggeration) below its start. */
static void count_energies(void *user, int iteration, double seconds, double E, int evaluations, double step) {
  (void)iteration, (void)seconds, (void)evaluations, (void)step;
  *(int *)user += isfinite(E) != 0;
}

static void tsne_style_gd(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matd *before_final = NULL;
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "blobs:500:10:5", NULL, &ds));
  nle_csr *P = test_entropic_p(ctx, ds->X, 20);
  nle_model_spec spec = test_model_spec(NLE_MODEL_TSNE, 1.0, P);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kind = NLE_OPT_GD;
  oo.fixed_rate = true;
  oo.learning_rate = 200;
  oo.exaggeration = 12;
  oo.exaggeration_iters = 100;
  oo.max_iters = 400;
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
  nle_matd *X = random_x(500, 2, 1e-4, 91);
  double e_start;
  nle_test_ok(nle_model_eval(ctx, m, X, &e_start, NULL));
  nle_opt_report rep;
  nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0 && rep.iterations == 400 && rep.E < e_start);
  double acc = 0;
  nle_test_ok(nle_knn_accuracy_cv(ctx, X, ds->labels, 10, 5, &acc));
  if (!nle_test(acc >= 0.95)) printf("  accuracy %.3f\n", acc);
  double e_again;
  nle_test_ok(nle_model_eval(ctx, m, X, &e_again, NULL)); /* exaggeration was restored */
  nle_test(e_again == rep.E);
  /* E on every iteration or only at the start and end: the same steps, bit
   * for bit, and the trace sees E only where it was computed */
  int energies[2] = {0, 0};
  for (int every = 0; every <= 1; every++) {
    nle_opt_opts oe = oo;
    oe.energy_every = every;
    oe.trace = count_energies;
    oe.trace_user = &energies[every];
    nle_opt *o2;
    nle_test_ok(nle_opt_new(ctx, m, P, &oe, &o2));
    nle_matd *X2 = random_x(500, 2, 1e-4, 91);
    nle_opt_report r2;
    nle_test(nle_opt_run(ctx, o2, X2, &r2) >= 0 && r2.E == rep.E && !memcmp(X2->data, X->data, 1000 * sizeof(double)));
    nle_matd_free(&X2);
    nle_opt_free(&o2);
  }
  if (!nle_test(energies[0] == 1 && energies[1] == 400)) /* every 0: the first iteration's E alone */
    printf("  finite energies in the trace: %d and %d\n", energies[0], energies[1]);
  oo.energy_every = -1;
  nle_opt *bad = NULL;
  nle_test(nle_opt_new(ctx, m, P, &oo, &bad) == NLE_ERR_ARG && bad == NULL);
  oo.energy_every = 0;
  oo.kind = NLE_OPT_SD; /* a rate needs gradient descent */
  nle_test(nle_opt_new(ctx, m, P, &oo, &bad) == NLE_ERR_ARG && bad == NULL);
  oo.kind = NLE_OPT_GD;
  oo.learning_rate = 0; /* fixed rates are positive: 0 is no longer "line search" */
  oo.learning_rate_final = 100;
  nle_test(nle_opt_new(ctx, m, P, &oo, &bad) == NLE_ERR_ARG && bad == NULL);
  oo.learning_rate = 200;
  oo.learning_rate_final = 0; /* nor "the first rate": that is NLE_AUTO */
  nle_test(nle_opt_new(ctx, m, P, &oo, &bad) == NLE_ERR_ARG && bad == NULL);
  /* The final rate takes over exactly when the exaggeration ends: runs that
   * stop there agree bit for bit whatever it is, and differ one step later. */
  oo.learning_rate = 200;
  oo.max_iters = 100;
  double rates[] = {NLE_AUTO, 200, 5000}; /* NLE_AUTO: the first rate throughout */
  nle_matd *after[3];
  for (int r = 0; r < 3; r++) {
    nle_opt_opts of = oo;
    of.learning_rate_final = rates[r];
    for (int extra = 0; extra <= 1; extra++) {
      of.max_iters = 100 + extra;
      nle_opt *o3;
      nle_test_ok(nle_opt_new(ctx, m, P, &of, &o3));
      nle_matd *X3 = random_x(500, 2, 1e-4, 91);
      nle_test(nle_opt_run(ctx, o3, X3, &rep) >= 0);
      if (extra) after[r] = X3;
      else {
        if (r) nle_test(!memcmp(X3->data, before_final->data, 1000 * sizeof(double)));
        else before_final = X3, X3 = NULL;
        nle_matd_free(&X3);
      }
      nle_opt_free(&o3);
    }
  }
  nle_test(!memcmp(after[0]->data, after[1]->data, 1000 * sizeof(double)));
  nle_test(memcmp(after[0]->data, after[2]->data, 1000 * sizeof(double)) != 0);
  for (int r = 0; r < 3; r++) nle_matd_free(&after[r]);
  nle_matd_free(&before_final);
  nle_matd_free(&X);
  nle_opt_free(&opt);
  nle_model_free(&m);
  nle_csr_free(&P);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* Resume equals an uninterrupted run: for every optimiser (and the t-SNE
 * style fixed-rate descent, and a homotopy path), a run cancelled part way
 * (at any progress call, mid-evaluation included) writes its checkpoint; a
 * fresh model and optimiser loading it finish with the same X, bit for bit,
 * and the same counts. */
typedef struct {
  int calls, cancel_at;
} cancel_counter;

static int cancel_after(void *user, const char *stage, double fraction) {
  (void)stage;
  (void)fraction;
  cancel_counter *c = user;
  return ++c->calls >= c->cancel_at;
}

typedef struct {
  nle_model *m;
  nle_opt *opt;
} planned;

static planned plan_run(nle_ctx *ctx, const nle_csr *P, const nle_opt_opts *oo, int homotopy) {
  planned p;
  nle_model_spec spec = test_model_spec(homotopy ? NLE_MODEL_EE : NLE_MODEL_TSNE, 1.0, P);
  if (nle_model_new(ctx, &spec, &p.m) || nle_opt_new(ctx, p.m, P, oo, &p.opt)) exit(2);
  return p;
}

static nle_status run_planned(nle_ctx *ctx, planned *p, nle_matd *X, int homotopy, nle_opt_report *rep) {
  if (!homotopy) return nle_opt_run(ctx, p->opt, X, rep);
  nle_homotopy_opts ho;
  nle_homotopy_opts_init(&ho);
  ho.lambda_start = 1e-3;
  ho.lambda_end = 1.0;
  ho.steps = 4;
  return nle_homotopy_run(ctx, p->m, p->opt, X, &ho, NULL, NULL, rep);
}

static void resume_equals_uninterrupted(void) {
  nle_matf *Y = test_random_matf(120, 5, 61);
  nle_ctx *ctx0 = test_ctx(1);
  nle_csr *P = test_entropic_p(ctx0, Y, 10);
  nle_ctx_free(&ctx0);
  const char *path = test_path("run.ckpt");
  for (int variant = 0; variant <= NLE_OPT_SDM + 2; variant++) {
    int homotopy = variant == NLE_OPT_SDM + 2, momentum = variant == NLE_OPT_SDM + 1;
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = momentum ? NLE_OPT_GD : homotopy ? NLE_OPT_SD : (nle_opt_kind)variant;
    oo.max_iters = 30;
    oo.tol = 0;
    if (momentum) {
      oo.fixed_rate = true;
      oo.learning_rate = 100;
      oo.exaggeration = 4;
      oo.exaggeration_iters = 10;
    }
    /* The uninterrupted run. */
    nle_ctx *ctx = test_ctx(1);
    planned a = plan_run(ctx, P, &oo, homotopy);
    nle_matd *Xa = random_x(120, 2, 1e-2, 62);
    nle_opt_report ra;
    nle_test(run_planned(ctx, &a, Xa, homotopy, &ra) >= 0);
    nle_ctx_free(&ctx);
    for (int cancel_at = 7; cancel_at <= 40; cancel_at += 33) {
      /* Cancelled, then resumed by fresh objects (a later process). */
      ctx = test_ctx(1);
      cancel_counter cc = {0, cancel_at};
      nle_ctx_set_progress(ctx, cancel_after, &cc);
      planned b = plan_run(ctx, P, &oo, homotopy);
      nle_test_ok(nle_opt_set_checkpoint(ctx, b.opt, path, 0, "test run"));
      nle_matd *Xb = random_x(120, 2, 1e-2, 62);
      nle_opt_report rb;
      nle_test(run_planned(ctx, &b, Xb, homotopy, &rb) == NLE_ERR_CANCELLED);
      nle_ctx_free(&ctx);
      ctx = test_ctx(1);
      planned c = plan_run(ctx, P, &oo, homotopy);
      nle_matd *Xc = random_x(120, 2, 5.0, 63); /* overwritten by the checkpoint */
      nle_test(nle_opt_load_checkpoint(ctx, c.opt, Xc, path, "another run") == NLE_ERR_ARG);
      nle_test_ok(nle_opt_load_checkpoint(ctx, c.opt, Xc, path, "test run"));
      nle_opt_report rc;
      nle_test(run_planned(ctx, &c, Xc, homotopy, &rc) >= 0);
      int same = !memcmp(Xa->data, Xc->data, 240 * sizeof(double));
      if (!nle_test(same && rc.iterations == ra.iterations && rc.evaluations == ra.evaluations && rc.E == ra.E))
        printf("  variant %d, cancel at %d: iterations %d/%d, evaluations %d/%d, E %.17g/%.17g\n", variant,
               cancel_at, rc.iterations, ra.iterations, rc.evaluations, ra.evaluations, rc.E, ra.E);
      nle_matd_free(&Xb);
      nle_matd_free(&Xc);
      nle_opt_free(&b.opt);
      nle_model_free(&b.m);
      nle_opt_free(&c.opt);
      nle_model_free(&c.m);
      nle_ctx_free(&ctx);
    }
    nle_matd_free(&Xa);
    nle_opt_free(&a.opt);
    nle_model_free(&a.m);
    if (variant == 0) { /* the checkpoint left by the last cancelled run */
      ctx = test_ctx(1);
      char original[4096]; /* test_path's buffer is reused by the copies */
      snprintf(original, sizeof original, "%s", path);
      int tried = 0, accepted = damaged_copies_accepted(ctx, original, load_checkpoint_file, &tried);
      if (!nle_test(tried > 384 && accepted == 0)) printf("  checkpoint: %d of %d damaged copies accepted\n", accepted, tried);
      if (!nle_test(load_checkpoint_file(ctx, original) == NLE_OK)) printf("  %s\n", nle_ctx_error(ctx));
      nle_ctx_free(&ctx);
    }
  }
  nle_csr_free(&P);
  nle_matf_free(&Y);
}

/* The checkpoint's records stay as files written before each optimiser
 * kept its own state: X, then the optimiser's history (L-BFGS: its ring of
 * `memory` pairs and rho; CG: the previous gradient and direction; the
 * fixed-rate descent: velocity and gains), its two counters in "ints"
 * (9: pairs or steps kept, 10: the ring's head; -1: L-BFGS's, from 1 to
 * the 6 steps, as many as the curvature pairs kept). And counters the
 * optimiser's history cannot have are refused. */
typedef struct {
  nle_opt_kind kind;
  bool fixed_rate;
  const char *names[8];
  int64_t count, head;
} layout_case;

/* The file at `path` rewritten with ints[slot] = value (valid CRCs). */
static void rewrite_int(nle_ctx *ctx, const char *path, const char *copy, int slot, int64_t value) {
  nle__rec_file f;
  nle__afile af;
  if (nle__rec_read(ctx, path, "checkpoint", &f) || nle__rec_open(ctx, copy, "checkpoint", &af)) exit(2);
  for (size_t e = 0; e < f.count; e++) {
    const nle__rec_entry *r = &f.entries[e];
    int64_t ints[16];
    if (!strcmp(r->name, "ints")) {
      memcpy(ints, r->data, (size_t)r->count * sizeof *ints);
      ints[slot] = value;
    }
    if (r->type == 's') nle__rec_put_text(&af, r->name, (const char *)r->data);
    else nle__rec_put(&af, r->name, r->type, !strcmp(r->name, "ints") ? (const void *)ints : r->data, r->count);
  }
  nle__rec_free(&f);
  if (nle__afile_commit(ctx, &af)) exit(2);
}

static void checkpoint_layout(void) {
  static const layout_case cases[] = {
      {NLE_OPT_LBFGS, false, {"fingerprint", "ints", "doubles", "X", "lbfgs_s", "lbfgs_y", "lbfgs_rho"}, -1, -1},
      {NLE_OPT_CG, false, {"fingerprint", "ints", "doubles", "X", "cg_g", "cg_p"}, 1, 0},
      {NLE_OPT_GD, true, {"fingerprint", "ints", "doubles", "X", "velocity", "gain"}, 0, 0},
      {NLE_OPT_SD, false, {"fingerprint", "ints", "doubles", "X"}, 0, 0}};
  nle_matf *Y = test_random_matf(80, 5, 71);
  nle_ctx *ctx = test_ctx(1);
  nle_csr *P = test_entropic_p(ctx, Y, 10);
  char path[4096], copy[4096];
  snprintf(path, sizeof path, "%s", test_path("layout.ckpt"));
  snprintf(copy, sizeof copy, "%s", test_path("layout_copy.ckpt"));
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const layout_case *k = &cases[c];
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = k->kind, oo.fixed_rate = k->fixed_rate, oo.max_iters = 6, oo.tol = 0, oo.memory = 8;
    planned p = plan_run(ctx, P, &oo, 0);
    nle_matd *X = random_x(80, 2, 1e-2, 72);
    nle_opt_report rep;
    nle_test(nle_opt_run(ctx, p.opt, X, &rep) >= 0 && rep.iterations == 6);
    nle_test_ok(nle_opt_save_checkpoint(ctx, p.opt, X, path, "layout"));
    nle__rec_file f;
    nle_test_ok(nle__rec_read(ctx, path, "checkpoint", &f));
    size_t names = 0;
    while (names < 8 && k->names[names]) names++;
    int same = f.count == names;
    for (size_t e = 0; same && e < names; e++) same = !strcmp(f.entries[e].name, k->names[e]);
    const int64_t *ints = same ? f.entries[1].data : NULL;
    same = same && f.entries[1].count == 15;
    if (same && k->count < 0) same = ints[9] >= 1 && ints[9] <= 6 && ints[10] == ints[9]; /* pairs kept, ring not wrapped */
    else if (same) same = ints[9] == k->count && ints[10] == k->head;
    if (same && k->kind == NLE_OPT_LBFGS) same = f.entries[4].count == 8 * 160 && f.entries[6].count == 8;
    if (!nle_test(same))
      printf("  optimiser %s: %zu records, counters %lld %lld, not the layout of its files\n", nle_opt_name(k->kind), f.count,
             f.count > 1 ? (long long)((const int64_t *)f.entries[1].data)[9] : -1LL,
             f.count > 1 ? (long long)((const int64_t *)f.entries[1].data)[10] : -1LL);
    nle__rec_free(&f);
    /* counters out of the history's range: the optimiser's read refuses them */
    rewrite_int(ctx, path, copy, 9, k->kind == NLE_OPT_LBFGS ? 9 : k->kind == NLE_OPT_CG ? 2 : 1);
    nle_test(nle_opt_load_checkpoint(ctx, p.opt, X, copy, "layout") == NLE_ERR_FORMAT);
    rewrite_int(ctx, path, copy, 10, k->kind == NLE_OPT_LBFGS ? 8 : 1);
    nle_test(nle_opt_load_checkpoint(ctx, p.opt, X, copy, "layout") == NLE_ERR_FORMAT);
    nle_test_ok(nle_opt_load_checkpoint(ctx, p.opt, X, path, "layout"));
    nle_matd_free(&X);
    nle_opt_free(&p.opt);
    nle_model_free(&p.m);
  }
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* SD with a sparsified W+ (kappa = 1: each point keeps its heaviest
 * neighbour, which leaves many components) is kept connected by W+'s
 * heaviest joining edges: EE from a small start then ends 30 iterations at
 * an E no higher than kappa = 3's (measured 973 against 1676; without the
 * joining edges 2688: a component held only by mu takes steps of ~1e10 and
 * the line search crawls; on 70,000 Fashion-MNIST points at kappa = 3 it
 * stalled in the first iterations). */
const nle_test_case optimize_run_tests[] = {
    {"optimize/monotone_decrease", monotone_decrease},
    {"optimize/separates_clusters", separates_clusters},
    {"optimize/tsne_style_gd", tsne_style_gd},
    {"optimize/resume_equals_uninterrupted", resume_equals_uninterrupted},
    {"optimize/checkpoint_layout", checkpoint_layout},
    {NULL, NULL}};
