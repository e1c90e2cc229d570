/* mpi.c — the tool under mpirun (issue 38, docs/mpi.md).
 *
 * Started by mpirun (its environment names a world of ranks) and built
 * with MPI, the tool initialises MPI (MPI_THREAD_FUNNELED: OpenMP threads
 * inside a rank, MPI calls from the main thread only), and every context it
 * makes gets the world communicator, so the library's stages share the
 * rows out. Rank 0 alone speaks: the other ranks' standard output goes
 * nowhere and their standard error is held back. Every failure the library
 * reports is agreed by all ranks (nle__comm_agree), so rank 0 prints it
 * once; a rank that fails alone (its peers do not come to the exit within
 * EXIT_WAIT_SECONDS) prints its own held error lines and aborts the job,
 * rather than leaving its peers waiting. Started without mpirun, nothing
 * here runs: no MPI_Init, the tool as alone. A build without MPI started
 * on more than one rank refuses with one line (from rank 0). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef NLE_WITH_MPI
#include <mpi.h>
#include <fcntl.h>
#include <sched.h>
#endif

/* How long a failed rank waits for its peers at the exit before deciding
 * its failure was its own. */
enum { EXIT_WAIT_SECONDS = 10 };

static struct {
  bool started; /* MPI_Init was called */
  int ranks, rank;
  FILE *held;   /* a rank other than 0: its standard error, held back */
  int stderr_fd; /* the real standard error */
} world = {.ranks = 1, .stderr_fd = -1};

/* The world's size as the launcher's environment says it (0: not started
 * by a launcher), and this process's rank in it. */
static int launcher_ranks(int *rank) {
  const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!size) size = getenv("PMI_SIZE"), r = getenv("PMI_RANK");
  if (!r) r = getenv("PMIX_RANK");
  *rank = r ? atoi(r) : 0;
  if (size) return atoi(size) > 0 ? atoi(size) : 1;
  return r ? 1 : 0; /* PMIx alone names no size: MPI_Init learns it */
}

int cli_ranks(void) { return world.ranks; }
bool cli_quiet_rank(void) { return world.rank != 0; }

#ifdef NLE_WITH_MPI

static MPI_Comm world_comm;

/* Started by mpirun, even with one rank: the library then takes the
 * ranks' way where a process alone would take another (the locality
 * order), so that 1 rank gives the same bits as several. */
const void *cli_world(void) { return world.started ? &world_comm : NULL; }

/* A rank other than 0: standard output to nowhere, standard error held. */
static void quiet_rank(void) {
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) {
    fflush(stdout);
    dup2(null, STDOUT_FILENO);
    close(null);
  }
  world.held = tmpfile();
  if (!world.held) return;
  fflush(stderr);
  world.stderr_fd = dup(STDERR_FILENO);
  dup2(fileno(world.held), STDERR_FILENO);
}

/* OpenMPI binds each rank to one core when it starts two or fewer ranks:
 * a rank's threads (every core, by default) then share that core, and a
 * 16-core machine runs as one. Said once, by rank 0, when the ranks on this
 * machine are allowed fewer cores than it has. */
static void warn_bound_cores(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  long here = local && atoi(local) > 0 ? atoi(local) : 1, mine = CPU_COUNT(&allowed);
  if (online > 0 && mine * here < online)
    fprintf(stderr,
            "nlembed: warning: mpirun bound each rank to %ld of this machine's %ld cores (%ld rank%s here): "
            "mpirun --bind-to none, or --map-by slot:PE=N, gives a rank its threads (docs/mpi.md)\n",
            mine, online, here, here == 1 ? "" : "s");
}

int cli_mpi_start(int *argc, char ***argv) {
  int rank;
  if (!launcher_ranks(&rank)) return 0;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "nlembed: error: MPI_Init failed on rank %d\n", rank);
    return 1;
  }
  world.started = true;
  world_comm = MPI_COMM_WORLD;
  MPI_Comm_size(MPI_COMM_WORLD, &world.ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  if (provided < MPI_THREAD_FUNNELED && world.ranks > 1) {
    if (world.rank == 0)
      fprintf(stderr, "nlembed: error: this MPI gives no MPI_THREAD_FUNNELED (threads inside a rank)\n");
    MPI_Finalize();
    world.started = false;
    return 1;
  }
  if (world.rank == 0) warn_bound_cores();
  if (world.rank != 0) quiet_rank();
  return 0;
}

/* The held lines that say what went wrong (not the progress) to the real
 * standard error. */
static void show_held_errors(void) {
  if (!world.held || world.stderr_fd < 0) return;
  fflush(stderr);
  rewind(world.held);
  FILE *out = fdopen(world.stderr_fd, "w");
  char line[4096];
  while (out && fgets(line, sizeof line, world.held))
    if (strstr(line, "error:") || strstr(line, "stopped by")) fprintf(out, "%s", line);
  if (out) fflush(out);
}

size_t cli_sum_over_ranks(size_t n) {
  uint64_t v = n, sum = n;
  if (world.ranks > 1) MPI_Allreduce(&v, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return (size_t)sum;
}

int cli_mpi_end(int rc) {
  if (!world.started) return rc;
  fflush(stdout);
  fflush(stderr);
  if (world.ranks > 1) {
    /* all ranks here: the failure (if any) was agreed, and rank 0 told it */
    MPI_Request arrived;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &arrived);
    double since = MPI_Wtime();
    while (!done) {
      MPI_Test(&arrived, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (rc && MPI_Wtime() - since > EXIT_WAIT_SECONDS) {
        if (world.rank != 0) show_held_errors();
        MPI_Abort(MPI_COMM_WORLD, rc); /* the peers are elsewhere: end the job */
      }
      usleep(2000);
    }
  }
  MPI_Finalize();
  return rc;
}

#else /* built without MPI: refuses a world of more than one rank */

const void *cli_world(void) { return NULL; }

int cli_mpi_start(int *argc, char ***argv) {
  (void)argc, (void)argv;
  int rank, ranks = launcher_ranks(&rank);
  if (ranks <= 1) return 0;
  if (rank == 0)
    fprintf(stderr, "nlembed: error: this nlembed was built without MPI and cannot run on %d ranks (rebuild it with "
                    "MPI: make MPI=1; docs/mpi.md)\n", ranks);
  return 2;
}

int cli_mpi_end(int rc) { return rc; }
size_t cli_sum_over_ranks(size_t n) { return n; }

#endif
