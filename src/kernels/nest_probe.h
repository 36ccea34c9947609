/* The loop of every table's peak_macs probe (hv_mm_kernels), written once:
 * n (12 or 24) independent chains c0, c1, ... of type T from zero, each
 * taking c = STEP(c) a round for `steps` rounds (the function's parameter),
 * with an empty asm per chain and round (register constraint reg) that
 * keeps the chains from being folded, and ROUND (a statement, or nothing)
 * at the start of each round; then the function returns the
 * multiply-accumulates done, macs per chain and round. Only the
 * instruction (STEP) differs per table. */
#ifndef HV_NEST_PROBE_H
#define HV_NEST_PROBE_H

#define HV_PROBE_4(X, a, b, c, d, ...)                                                             \
    X(a, __VA_ARGS__);                                                                             \
    X(b, __VA_ARGS__);                                                                             \
    X(c, __VA_ARGS__);                                                                             \
    X(d, __VA_ARGS__)
#define HV_PROBE_CHAINS_12(X, ...)                                                                 \
    HV_PROBE_4(X, 0, 1, 2, 3, __VA_ARGS__);                                                        \
    HV_PROBE_4(X, 4, 5, 6, 7, __VA_ARGS__);                                                        \
    HV_PROBE_4(X, 8, 9, 10, 11, __VA_ARGS__)
#define HV_PROBE_CHAINS_24(X, ...)                                                                 \
    HV_PROBE_CHAINS_12(X, __VA_ARGS__);                                                            \
    HV_PROBE_4(X, 12, 13, 14, 15, __VA_ARGS__);                                                    \
    HV_PROBE_4(X, 16, 17, 18, 19, __VA_ARGS__);                                                    \
    HV_PROBE_4(X, 20, 21, 22, 23, __VA_ARGS__)
#define HV_PROBE_DECL(i, T, zero, STEP, reg) T c##i = zero
#define HV_PROBE_STEP(i, T, zero, STEP, reg) c##i = STEP(c##i)
#define HV_PROBE_KEEP(i, T, zero, STEP, reg) __asm__ volatile("" : reg(c##i))

#define HV_PROBE(n, T, zero, STEP, reg, macs, ROUND)                                               \
    do {                                                                                           \
        HV_PROBE_CHAINS_##n(HV_PROBE_DECL, T, zero, STEP, reg);                                    \
        for (long r_ = 0; r_ < steps; r_++) {                                                      \
            ROUND;                                                                                 \
            HV_PROBE_CHAINS_##n(HV_PROBE_STEP, T, zero, STEP, reg);                                \
            HV_PROBE_CHAINS_##n(HV_PROBE_KEEP, T, zero, STEP, reg);                                \
        }                                                                                          \
        return steps * (double)(n) * (macs);                                                       \
    } while (0)

#endif
