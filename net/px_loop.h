/* The loop context: the libuv loop, calls deferred to the next turn, and the writes batched
 * until the end of the turn.
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

#endif
