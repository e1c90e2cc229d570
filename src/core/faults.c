/* faults.c — allocation-failure injection for the tests (internal.h). */
#define NLE__FAULTS_IMPL
#include "internal.h"

#include <errno.h>

#ifdef NLE_ALLOC_FAULTS
static long fail_at, seen;

void nle__alloc_fail_at(long n) {
  __atomic_store_n(&seen, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fail_at, n, __ATOMIC_SEQ_CST);
}

long nle__alloc_count(void) { return __atomic_load_n(&seen, __ATOMIC_SEQ_CST); }

/* Whether this allocation is the one to fail (threads count in turn). */
static bool fails(void) {
  long target = __atomic_load_n(&fail_at, __ATOMIC_SEQ_CST);
  return target > 0 && __atomic_add_fetch(&seen, 1, __ATOMIC_SEQ_CST) == target;
}

void *nle__fault_malloc(size_t n) { return fails() ? NULL : malloc(n); }
void *nle__fault_calloc(size_t count, size_t size) { return fails() ? NULL : calloc(count, size); }
void *nle__fault_realloc(void *p, size_t n) { return fails() ? NULL : realloc(p, n); }
char *nle__fault_strdup(const char *s) { return fails() ? NULL : strdup(s); }
int nle__fault_memalign(void **p, size_t align, size_t n) { return fails() ? ENOMEM : posix_memalign(p, align, n); }
#else
void nle__alloc_fail_at(long n) { (void)n; }
long nle__alloc_count(void) { return 0; }
#endif
