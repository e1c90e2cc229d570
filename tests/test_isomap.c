/* test_isomap.c — Isomap against independent references (being written). */
#include "harness.h"

const nle_test_case isomap_tests[] = {{NULL, NULL}};
