/* Force-included (-include) into a second build of the library's sources
 * for test_alloc_failures: every allocation the library makes goes
 * through these, which fail the one allocation alloc_hook_arm() names (as
 * SQLite's malloc-failure tests do). It includes no header (the sources'
 * feature macros must come first): the system headers' declarations are
 * renamed with the calls, to the same types. */
#ifndef HV_ALLOC_HOOK_H
#define HV_ALLOC_HOOK_H

void *alloc_hook_malloc(__SIZE_TYPE__ n);
void *alloc_hook_calloc(__SIZE_TYPE__ count, __SIZE_TYPE__ n);
void *alloc_hook_realloc(void *p, __SIZE_TYPE__ n);
char *alloc_hook_strdup(const char *s);
int alloc_hook_posix_memalign(void **p, __SIZE_TYPE__ align, __SIZE_TYPE__ n);
void *alloc_hook_aligned_alloc(__SIZE_TYPE__ align, __SIZE_TYPE__ n);

#define malloc         alloc_hook_malloc
#define calloc         alloc_hook_calloc
#define realloc        alloc_hook_realloc
#define strdup         alloc_hook_strdup
#define posix_memalign alloc_hook_posix_memalign
#define aligned_alloc  alloc_hook_aligned_alloc

#endif
