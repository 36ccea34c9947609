/* The control of the allocation hook (alloc_hook.h). */
#ifndef HV_ALLOC_COUNTER_H
#define HV_ALLOC_COUNTER_H

/* Fails the n-th allocation from now (n >= 1), and that one only; 0:
 * none. Resets the count. */
void alloc_hook_arm(long n);
/* Allocations since alloc_hook_arm, and whether the armed one failed. */
long alloc_hook_count(void);
int alloc_hook_fired(void);

#endif
