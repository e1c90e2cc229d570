/* cmd_kem.c — nlembed kem: kernel eigenmaps (Brand 2003; in progress). */
#include "cli.h"

#include <stdio.h>

int cmd_kem(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "nlembed kem: error: not built yet\n");
  return 2;
}
