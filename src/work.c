/*
 * The work budget of one request (hviske.h, hv_work_check): how many
 * decodings a chunk may run, whatever mix of beams, best_of draws and
 * temperatures buys them. One check for every caller: hv_transcribe, the
 * server's two endpoints, the CLI and Python.
 */
#include <limits.h>
#include <stdio.h>

#include "hviske.h"
#include "util/error.h"

/* Decodings of one temperature: beam search (or greedy) at 0, best_of
 * sampling draws above it. */
static int work_at(const hv_transcribe_params *p, float t) {
    return t > 0 ? p->best_of : p->num_beams;
}

int hv_work(const hv_transcribe_params *p) {
    if (!p || p->num_beams < 1 || p->best_of < 1 || p->n_temperatures < 0 ||
        p->n_temperatures > HV_MAX_TEMPERATURES || (p->n_temperatures > 0 && !p->temperatures))
        return INT_MAX;
    if (p->n_temperatures == 0) return work_at(p, p->do_sample ? p->temperature : 0.0f);
    long long w = 0;
    for (int i = 0; i < p->n_temperatures; i++) w += work_at(p, p->temperatures[i]);
    return w > INT_MAX ? INT_MAX : (int)w;
}

hv_status hv_work_check(const hv_transcribe_params *p, int max_work, char *errbuf, size_t n) {
    hv_error e = {0};
    hv_status st = HV_OK;
    if (!p || max_work < 1 || max_work > HV_MAX_BEAMS)
        st = hv_err(&e, HV_ERR_INVALID_ARG, "work budget %d: must be from 1 to %d", max_work,
                    HV_MAX_BEAMS);
    else if (p->num_beams < 1 || p->num_beams > max_work)
        st = hv_err(&e, HV_ERR_INVALID_ARG,
                    "num_beams %d: must be from 1 to %d (the work budget, max_beams)", p->num_beams,
                    max_work);
    else if (p->best_of < 1 || p->best_of > max_work)
        st = hv_err(&e, HV_ERR_INVALID_ARG,
                    "best_of %d: must be from 1 to %d (the work budget, max_beams)", p->best_of,
                    max_work);
    else if (p->n_temperatures < 0 || p->n_temperatures > HV_MAX_TEMPERATURES)
        st = hv_err(&e, HV_ERR_INVALID_ARG,
                    "a list of %d temperatures: at most %d (whisper's steps 0, 0.2, ..., 1)",
                    p->n_temperatures, HV_MAX_TEMPERATURES);
    else if (hv_work(p) > max_work)
        st = hv_err(&e, HV_ERR_INVALID_ARG,
                    "num_beams %d, best_of %d and %d temperatures make %d decodings a chunk, over "
                    "the work budget of %d (max_beams: each beam at a temperature of 0, each "
                    "best_of draw above 0, counted for every temperature tried)",
                    p->num_beams, p->best_of, p->n_temperatures ? p->n_temperatures : 1, hv_work(p),
                    max_work);
    if (st && errbuf && n) snprintf(errbuf, n, "%s", e.msg);
    return st;
}
