/* main.c — the nlembed command: dispatch to the sub-commands. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char *usage_head =
    "nlembed " NLE_VERSION_STRING " — nonlinear dimensionality reduction\n"
    "\n"
    "Usage: nlembed <command> [options] INPUT -o OUTPUT\n"
    "\n"
    "Commands:\n";
static const char *usage_tail =
    "\n"
    "Inputs (recognised from the content; docs/formats.md): CSV/TSV/text, NumPy\n"
    ".npy and .npz (also scipy.sparse's save_npz), IDX (MNIST format), Matrix Market\n"
    ".mtx (coordinate: sparse; array: dense), HDF5 and AnnData .h5ad (dense or\n"
    "sparse X; 10x .h5), MATLAB .mat (v5, v7, v7.3; dense or sparse), a 10x\n"
    "Genomics folder (matrix.mtx[.gz]: cells as points); text, .npy, IDX and .mtx\n"
    "also gzip'ed. FILE:NAME names an array inside a file (data.h5ad:X,\n"
    "data.npz:key, data.mat:var). Sparse data stays sparse where a command\n"
    "searches it (knn, ee ... sne, the spectral methods and cluster); the other\n"
    "commands densify it under --max-memory.\n"
    "Or a dataset name: fashion-mnist (70,000 x 784, Debian's dataset-fashion-mnist),\n"
    "fashion-mnist:N (the first N), fashion-mnist-train, fashion-mnist-test,\n"
    "swissroll:N, spiral:N, blobs:N[:D[:K]].\n"
    "Outputs: .npy, .csv, .tsv, .txt (by extension), .mtx for sparse graphs.\n"
    "\n"
    "Distributed (docs/mpi.md): mpirun -np R nlembed <command> ... runs the same\n"
    "command on R ranks, each holding a block of the rows (a .npy INPUT is read by\n"
    "offset, a .npy OUTPUT written by offset); the same result, bit for bit;\n"
    "--max-memory is per rank. Methods not yet distributed are refused there.\n"
    "\n"
    "  nlembed <command> --help   options of one command\n"
    "  nlembed --version          version\n"
    "\n"
    "Example:\n"
    "  nlembed pca fashion-mnist -d 2 -o pca.npy\n"
    "  nlembed metrics fashion-mnist pca.npy\n"
    "  nlembed plot pca.npy --labels fashion-mnist -o pca.png\n";

/* The tool's own commands (cli/cmd_NAME.c); every other is a method of the
 * estimator. */
int cmd_transform(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_view(int argc, char **argv);
static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary; /* for nlembed --help */
  bool distributed;    /* runs under mpirun on more than one rank (docs/mpi.md) */
} tool_commands[] = {
    {"transform", cmd_transform, "new points through a saved model (--save-model), or back to data space", true},
    {"metrics", cmd_metrics,
     "quality of an embedding: kNN recall, trustworthiness, continuity, kNN accuracy (one JSON line)", false},
    {"plot", cmd_plot, "scatter plot of a 2-D embedding (PNG or SVG)", false},
    {"view", cmd_view, "interactive page of a 2-D embedding (one HTML file: WebGL, hover, images, lasso, search)", false},
};

/* The command list: each method by the first clause of its paragraph (up
 * to " (", ":" or "."), then the tool's own commands. */
static void print_usage(FILE *f) {
  fputs(usage_head, f);
  nle_ctx *ctx = nle_ctx_new();
  for (int m = 0; ctx && nle_estimator_method_name(m); m++) {
    nle_estimator *e = NULL;
    if (nle_estimator_new(ctx, nle_estimator_method_name(m), &e)) continue;
    const char *about = nle_estimator_about(e);
    size_t len = strcspn(about, ":.");
    const char *paren = strstr(about, " (");
    if (paren && (size_t)(paren - about) < len) len = (size_t)(paren - about);
    fprintf(f, "  %-10s %.*s\n", nle_estimator_method_name(m), (int)len, about);
    nle_estimator_free(&e);
  }
  nle_ctx_free(&ctx);
  for (size_t i = 0; i < sizeof tool_commands / sizeof *tool_commands; i++)
    fprintf(f, "  %-10s %s\n", tool_commands[i].name, tool_commands[i].summary);
  if (!nle_view_available())
    fputs("             view is NOT IN THIS BUILD: the tool was built without node and npm\n"
          "             (./setup.sh build makes the page script, then make)\n",
          f);
  fputs(usage_tail, f);
}

static int dispatch(const char *cmd, int argc, char **argv) {
  for (size_t i = 0; i < sizeof tool_commands / sizeof *tool_commands; i++) {
    if (strcmp(cmd, tool_commands[i].name)) continue;
    if (cli_ranks() > 1 && !tool_commands[i].distributed)
      return fprintf(stderr, "nlembed %s: error: %s does not run on more than one rank (run it without mpirun)\n", cmd,
                     cmd), 2;
    return tool_commands[i].run(argc, argv);
  }
  for (int m = 0; nle_estimator_method_name(m); m++)
    if (!strcmp(cmd, nle_estimator_method_name(m))) return cmd_fit(argc, argv, cmd);
  fprintf(stderr, "nlembed: error: unknown command \"%s\" (see nlembed --help)\n", cmd);
  return 2;
}

static int run_command(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") && argc > 2) {
    char help[] = "--help";
    char *sub[] = {argv[2], help, NULL};
    return dispatch(argv[2], 2, sub);
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    print_usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("nlembed %s\n", nle_version());
    return 0;
  }
  return dispatch(cmd, argc - 1, argv + 1);
}

/* Under mpirun every rank runs the command (docs/mpi.md). */
int main(int argc, char **argv) {
  int rc = cli_mpi_start(&argc, &argv);
  return rc ? rc : cli_mpi_end(run_command(argc, argv));
}
