#include "audio/speech_chunks.h"

#include <stdint.h>
#include <stdlib.h>

#include "audio/chunking.h"

void hv_piece_plan_free(hv_piece_plan *plan) {
    if (!plan) return;
    free(plan->pieces);
    free(plan->speech);
    free(plan->first);
    plan->pieces = plan->speech = NULL;
    plan->first = NULL;
    plan->n_pieces = plan->n_chunks = 0;
}

hv_status hv_piece_plan_from_bounds(const size_t *bounds, int n_chunks, hv_piece_plan *out,
                                    hv_error *e) {
    hv_piece_plan plan = {0};
    *out = plan;
    plan.pieces = malloc((size_t)(n_chunks ? n_chunks : 1) * sizeof *plan.pieces);
    plan.speech = malloc((size_t)(n_chunks ? n_chunks : 1) * sizeof *plan.speech);
    plan.first = malloc((size_t)(n_chunks + 1) * sizeof *plan.first);
    if (!plan.pieces || !plan.speech || !plan.first) {
        hv_piece_plan_free(&plan);
        return hv_err(e, HV_ERR_NOMEM, "out of memory planning chunks");
    }
    for (int i = 0; i < n_chunks; i++) {
        plan.pieces[i] = plan.speech[i] = (hv_span){bounds[i], bounds[i + 1]};
        plan.first[i] = i;
    }
    plan.first[n_chunks] = n_chunks;
    plan.n_pieces = plan.n_chunks = n_chunks;
    *out = plan;
    return HV_OK;
}

hv_span hv_piece_plan_chunk_speech(const hv_piece_plan *plan, int i) {
    return (hv_span){plan->speech[plan->first[i]].start, plan->speech[plan->first[i + 1] - 1].end};
}

size_t hv_piece_plan_chunk_samples(const hv_piece_plan *plan, int i) {
    size_t len = 0;
    for (int k = plan->first[i]; k < plan->first[i + 1]; k++)
        len += plan->pieces[k].end - plan->pieces[k].start;
    return len;
}

size_t hv_piece_plan_to_input(const hv_piece_plan *plan, int i, size_t pos) {
    int k = plan->first[i], last = plan->first[i + 1] - 1;
    for (; k < last; k++) {
        size_t len = plan->pieces[k].end - plan->pieces[k].start;
        if (pos < len) break;
        pos -= len;
    }
    return plan->pieces[k].start + pos;
}

/* Appends the audio [a, b), whose speech is [sa, sb), to the pieces; one
 * longer than max_chunk becomes several pieces cut as the energy plan cuts
 * (they touch, so the chunking below cuts between them for want of any
 * longer pause), each piece's speech the part of [sa, sb) inside it. */
static hv_status add_region(hv_piece_plan *plan, const float *x, size_t a, size_t b, size_t sa,
                            size_t sb, const hv_speech_chunk_params *p, hv_error *e) {
    size_t *bounds = NULL;
    int n = 1;
    if (b - a > p->max_chunk) {
        hv_chunk_plan_params cp = {.mode = HV_CHUNKING_ENERGY,
                                   .chunk = p->max_chunk,
                                   .context = p->context,
                                   .window = p->window};
        hv_status st = hv_chunk_plan(x + a, b - a, &cp, &bounds, &n, e);
        if (st) return st;
    }
    size_t want = (size_t)(plan->n_pieces + n);
    hv_span *pc = realloc(plan->pieces, want * sizeof *pc);
    if (pc) plan->pieces = pc;
    hv_span *sp = pc ? realloc(plan->speech, want * sizeof *sp) : NULL;
    if (!sp) {
        free(bounds);
        return hv_err(e, HV_ERR_NOMEM, "out of memory planning speech chunks");
    }
    plan->speech = sp;
    for (int i = 0; i < n; i++) {
        hv_span piece = bounds ? (hv_span){a + bounds[i], a + bounds[i + 1]} : (hv_span){a, b};
        size_t s0 = piece.start > sa ? piece.start : sa, s1 = piece.end < sb ? piece.end : sb;
        if (s0 > s1) s0 = s1 = s1 < sa ? sa : s1; /* a piece of kept pause only */
        sp[plan->n_pieces] = (hv_span){s0, s1};
        pc[plan->n_pieces++] = piece;
    }
    free(bounds);
    return HV_OK;
}

/* The pause in the speech after piece k. */
static size_t pause(const hv_piece_plan *plan, int k) {
    return plan->speech[k + 1].start - plan->speech[k].end;
}

/* The pieces of one chunk starting at piece i: as many as fit in
 * max_chunk, up to a pause of max_gap or more; when more follow within
 * reach, the chunk ends at the longest pause after which it holds at least
 * half of max_chunk (the latest such pause on a tie, so chunks stay full),
 * or at the longest pause at all when no pause qualifies. Returns the index
 * after the chunk's last piece. */
static int chunk_end(const hv_piece_plan *plan, int i, size_t max_chunk, size_t max_gap) {
    const hv_span *pc = plan->pieces;
    size_t total = 0;
    int j = i;
    while (j < plan->n_pieces && total + (pc[j].end - pc[j].start) <= max_chunk) {
        if (j > i && max_gap && pause(plan, j - 1) >= max_gap) return j;
        total += pc[j].end - pc[j].start;
        j++;
    }
    if (j == plan->n_pieces) return j;
    if (j == i) return i + 1; /* cannot happen: add_region cuts long regions */
    /* pauses after pieces i .. j-1 (the one after j-1 separates it from
     * the piece that did not fit) */
    int best = -1, best_half = -1;
    size_t best_gap = 0, best_half_gap = 0, sum = 0;
    for (int k = i; k < j; k++) {
        sum += pc[k].end - pc[k].start;
        size_t gap = pause(plan, k);
        if (best < 0 || gap >= best_gap) best = k, best_gap = gap;
        if (2 * sum >= max_chunk && (best_half < 0 || gap >= best_half_gap))
            best_half = k, best_half_gap = gap;
    }
    return (best_half >= 0 ? best_half : best) + 1;
}

hv_status hv_piece_plan_from_speech(const float *x, size_t n, const hv_span *regions,
                                    size_t n_regions, const hv_speech_chunk_params *p,
                                    hv_piece_plan *out, hv_error *e) {
    hv_piece_plan plan = {0};
    hv_status st = HV_OK;
    *out = plan;
    if (p->max_chunk == 0 || p->context > p->max_chunk)
        return hv_err(e, HV_ERR_INVALID_ARG, "speech chunks: bad chunk size");
    if (n_regions > (size_t)(1 << 30))
        return hv_err(e, HV_ERR_LIMIT, "speech chunks: %zu regions is too many", n_regions);
    size_t prev_end = 0;
    for (size_t r = 0; r < n_regions; r++) {
        size_t a = regions[r].start, b = regions[r].end;
        if (a >= b || b > n || a < prev_end) {
            st = hv_err(e, HV_ERR_INVALID_ARG,
                        "speech region %zu [%zu, %zu) is empty, overlaps the one before "
                        "or ends after the audio (%zu samples)",
                        r, a, b, n);
            goto fail;
        }
        prev_end = b;
    }
    for (size_t r = 0; r < n_regions; r++) {
        /* up to half of keep_pause of the pause on each side, and never
         * more than half of a pause, so neighbours do not overlap */
        size_t a = regions[r].start, b = regions[r].end;
        size_t before = r ? (a - regions[r - 1].end) / 2 : a;
        size_t after = r + 1 < n_regions ? (regions[r + 1].start - b) / 2 : n - b;
        size_t half = p->keep_pause / 2;
        size_t a2 = a - (before < half ? before : half), b2 = b + (after < half ? after : half);
        if ((st = add_region(&plan, x, a2, b2, a, b, p, e))) goto fail;
    }
    /* at most one chunk per piece */
    if (!(plan.first = malloc((size_t)(plan.n_pieces + 1) * sizeof *plan.first))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory planning speech chunks");
        goto fail;
    }
    plan.first[0] = 0;
    for (int i = 0; i < plan.n_pieces;) {
        i = chunk_end(&plan, i, p->max_chunk, p->max_gap);
        plan.first[++plan.n_chunks] = i;
    }
    *out = plan;
    return HV_OK;
fail:
    hv_piece_plan_free(&plan);
    return st;
}

/* Appends piece k of core (its part [a, b)) to out's pieces. */
static void put_part(const hv_piece_plan *core, int k, size_t a, size_t b, hv_piece_plan *out) {
    hv_span s = core->speech[k];
    size_t s0 = s.start > a ? s.start : a, s1 = s.end < b ? s.end : b;
    if (s0 > s1) s0 = s1 = s.end < a ? a : b; /* a part of kept pause only */
    out->speech[out->n_pieces] = (hv_span){s0, s1};
    out->pieces[out->n_pieces++] = (hv_span){a, b};
}

hv_status hv_piece_plan_overlap(const hv_piece_plan *core, size_t reach, hv_piece_plan *out,
                                size_t *cuts, hv_error *e) {
    hv_piece_plan plan = {0};
    *out = plan;
    int n = core->n_chunks;
    /* each window holds its core and at most the pieces of its neighbours */
    size_t cap = (size_t)core->n_pieces * 3 + 1;
    plan.pieces = malloc(cap * sizeof *plan.pieces);
    plan.speech = malloc(cap * sizeof *plan.speech);
    plan.first = malloc((size_t)(n + 1) * sizeof *plan.first);
    if (!plan.pieces || !plan.speech || !plan.first) {
        hv_piece_plan_free(&plan);
        return hv_err(e, HV_ERR_NOMEM, "out of memory planning diarize windows");
    }
    for (int i = 0; i < n; i++) {
        int a = core->first[i], b = core->first[i + 1];
        plan.first[i] = plan.n_pieces;
        if (i > 0) { /* the end of chunk i - 1, in time order */
            int k = a;
            size_t room = reach;
            while (k > core->first[i - 1]) {
                size_t len = core->pieces[k - 1].end - core->pieces[k - 1].start;
                if (len > room) break;
                room -= len;
                k--;
            }
            if (k > core->first[i - 1] && room > 0)
                put_part(core, k - 1, core->pieces[k - 1].end - room, core->pieces[k - 1].end,
                         &plan);
            for (int q = k; q < a; q++)
                put_part(core, q, core->pieces[q].start, core->pieces[q].end, &plan);
        }
        for (int q = a; q < b; q++)
            put_part(core, q, core->pieces[q].start, core->pieces[q].end, &plan);
        if (i + 1 < n) { /* the start of chunk i + 1 */
            size_t room = reach;
            for (int q = b; q < core->first[i + 2] && room > 0; q++) {
                size_t len = core->pieces[q].end - core->pieces[q].start;
                size_t take = len < room ? len : room;
                put_part(core, q, core->pieces[q].start, core->pieces[q].start + take, &plan);
                room -= take;
            }
        }
        cuts[i] = i == 0 ? 0 : (core->pieces[a - 1].end + core->pieces[a].start) / 2;
    }
    plan.first[n] = plan.n_pieces;
    plan.n_chunks = n;
    cuts[n] = SIZE_MAX;
    *out = plan;
    return HV_OK;
}
