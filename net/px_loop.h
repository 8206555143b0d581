/* The loop context: the libuv loop, calls deferred to the next turn, the writes batched until
 * the end of the turn, calls for owners gone quiet, and one-shot deadlines (px_tmo_t).
 *
 * Deferred calls keep every callback coming from the loop, never from inside the call that
 * caused it (libuv's rule): an object that must report something synchronously queues a
 * px_defer_t instead. A deferred call runs in the same loop iteration when it was queued during
 * I/O callbacks, and the loop never blocks in poll while one is queued. */
#ifndef PX_LOOP_H
#define PX_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define px_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

typedef struct px_defer px_defer_t;
typedef void (*px_defer_cb)(px_defer_t *d);

/* Embedded in its owner; zero-initialized means idle. */
struct px_defer {
    px_defer_t *next;
    px_defer_cb cb;
    int queued;
};

typedef struct px_quiet px_quiet_t;
typedef void (*px_quiet_cb)(px_quiet_t *q);

/* A call for when its owner has gone quiet: embedded in the owner, zero-initialized. */
struct px_quiet {
    px_quiet_t *prev, *next;
    px_quiet_cb cb;
    uint32_t gen; /* the loop's period when last touched */
    int on;
};

typedef struct px_tmo px_tmo_t;
typedef void (*px_tmo_cb)(px_tmo_t *t);

/* A one-shot deadline, embedded in its owner and zero-initialized: 40 bytes where a uv_timer_t
 * is 152, for what every connection carries. The loop keeps the armed ones in lists under one
 * timer of its own. */
struct px_tmo {
    px_tmo_t *prev, *next;
    uint64_t due; /* loop time (uv_now), ms */
    px_tmo_cb cb;
    uint32_t lane; /* 1 + the list it waits in; 0 while not armed */
    uint32_t pass; /* the loop's firing pass when armed: one armed by a call waits for the next */
};

/* Deadlines armed for one duration are due in the order they were armed: each duration has a
 * list of its own, appended to at the tail, so arming and stopping are O(1). Durations beyond
 * the first PX_TMO_LANES - 1 at once share the last list, kept in order of due time. */
#define PX_TMO_LANES 8

typedef struct px_tmo_lane {
    uint64_t ms;
    px_tmo_t *head, *tail;
} px_tmo_lane_t;

typedef struct px_loop {
    uv_loop_t *uv;
    px_defer_t *head, *tail; /* calls for the next turn, in order */
    size_t count;
    uv_check_t check;        /* runs them after the poll phase */
    uv_idle_t idle;          /* active while calls wait: poll then does not block */
    int idle_on;
    char *rbuf;              /* the one read buffer: every read callback borrows it */
    size_t rbuf_cap;
    char *tbuf;              /* plaintext out of TLS, borrowed the same way */
    size_t tbuf_cap;
    uint64_t reads;          /* socket reads so far (the engine's heap trim looks for quiet) */
    px_quiet_t *quiet;       /* owners touched lately, waiting to go quiet */
    uv_timer_t quiet_timer;  /* every PX_QUIET_MS while that list is not empty */
    uint32_t quiet_gen;
    int quiet_on;
    px_tmo_lane_t tmo[PX_TMO_LANES];
    uv_timer_t tmo_timer; /* set for the soonest head, or stopped; unreferenced */
    uint64_t tmo_at;      /* when it is set for (UINT64_MAX: stopped); a stopped head's time
                           * may stay: the timer then finds nothing due and is set again */
    uint32_t tmo_pass;
    int tmo_firing;
} px_loop_t;

/* How long an owner must go untouched before its quiet call: between one and two periods. */
#define PX_QUIET_MS 100

/* Sets up l on uv. Returns 0 or PX_ENOMEM. */
int px_loop_init(px_loop_t *l, uv_loop_t *uv);

/* Closes the loop's own handles (run the loop afterwards to finish). */
void px_loop_close(px_loop_t *l);

/* Queues cb(d) for the next turn; a call already queued is not queued twice (cb is replaced).
 * d must stay valid until the call ran or px_defer_cancel(). */
void px_defer(px_loop_t *l, px_defer_t *d, px_defer_cb cb);

/* Drops d's queued call, if any. */
void px_defer_cancel(px_loop_t *l, px_defer_t *d);

/* Notes activity on q's owner: cb(q) runs once q then goes untouched for a full PX_QUIET_MS
 * period (for work not worth doing while the owner is busy: giving back buffers a stream would
 * only grow again). cb must not cancel another px_quiet_t. */
void px_quiet_touch(px_loop_t *l, px_quiet_t *q, px_quiet_cb cb);

/* Drops q's pending call, if any (before freeing its owner). */
void px_quiet_cancel(px_loop_t *l, px_quiet_t *q);

/* Arms t: cb(t) runs once, ms from the loop's time (uv_now), as with a uv_timer_t; armed
 * already, only the new deadline counts. A deadline armed from within a call is not called in
 * the same turn, even for 0 ms. */
void px_tmo_start(px_loop_t *l, px_tmo_t *t, uint64_t ms, px_tmo_cb cb);

/* Disarms t, if armed (before freeing its owner). */
void px_tmo_stop(px_loop_t *l, px_tmo_t *t);

static inline int px_tmo_armed(const px_tmo_t *t)
{
    return t->lane != 0;
}

#endif
