/* The allocation hook of alloc_hook.h: counts the library's allocations
 * and fails the armed one. The header gives the prototypes; its macros
 * are undone, since here the names are the C library's. */
#include "alloc_counter.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_hook.h"
#undef malloc
#undef calloc
#undef realloc
#undef strdup
#undef posix_memalign
#undef aligned_alloc

static atomic_long countdown; /* > 0: allocations until the one that fails */
static atomic_long counted;   /* allocations since alloc_hook_arm */
static atomic_int fired;

void alloc_hook_arm(long n) {
    atomic_store(&counted, 0);
    atomic_store(&fired, 0);
    atomic_store(&countdown, n);
}

long alloc_hook_count(void) { return atomic_load(&counted); }
int alloc_hook_fired(void) { return atomic_load(&fired); }

/* 1 when this allocation is the armed one. */
static int fail_now(void) {
    atomic_fetch_add(&counted, 1);
    if (atomic_load(&countdown) <= 0) return 0;
    if (atomic_fetch_sub(&countdown, 1) != 1) return 0;
    atomic_store(&fired, 1);
    return 1;
}

void *alloc_hook_malloc(size_t n) { return fail_now() ? NULL : malloc(n); }
void *alloc_hook_calloc(size_t count, size_t n) { return fail_now() ? NULL : calloc(count, n); }
void *alloc_hook_realloc(void *p, size_t n) { return fail_now() ? NULL : realloc(p, n); }
char *alloc_hook_strdup(const char *s) { return fail_now() ? NULL : strdup(s); }
int alloc_hook_posix_memalign(void **p, size_t align, size_t n) {
    return fail_now() ? 12 /* ENOMEM */ : posix_memalign(p, align, n);
}
void *alloc_hook_aligned_alloc(size_t align, size_t n) {
    return fail_now() ? NULL : aligned_alloc(align, n);
}
