/* The hold table (docs/approvals.md): requests the allowlist would block, held while a person
 * decides (`on_block: hold`). Identical holds (same conversation, method, host and path) are one
 * question with one ID, answered once for all its requests. Bounded per conversation and per
 * process, in held requests and in held bytes (base/px_limits.h): past a bound a request is not
 * held. An approval with scope conversation leaves an allow rule (method, host, path) for that
 * conversation in memory. One table per loop (the context's); it never calls into an exchange:
 * a held request hears its outcome through its waiter's callback.
 *
 * The logic takes the time as a parameter (unit tests); px_hold_start() adds a loop timer that
 * times questions out. */
#ifndef PX_HOLD_H
#define PX_HOLD_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/px_limits.h"

typedef struct px_hold px_hold_t;
typedef struct px_hold_q px_hold_q_t;
typedef struct px_hold_wait px_hold_wait_t;

typedef enum {
    PX_HOLD_PENDING = 0,
    PX_HOLD_APPROVED,
    PX_HOLD_DENIED,
    PX_HOLD_TIMEOUT,
} px_hold_outcome_t;

/* What an approval leaves behind: nothing (once), a rule for its conversation in memory
 * (conversation), or that rule and an entry in the drafts file (persist: px_drafts.h). */
enum {
    PX_HOLD_SCOPE_ONCE = 0,
    PX_HOLD_SCOPE_CONVERSATION = 1,
    PX_HOLD_SCOPE_PERSIST = 2,
};

/* An approval: its scope, and for a rule what it allows (borrowed for the call). */
typedef struct px_hold_grant {
    int scope;           /* PX_HOLD_SCOPE_* */
    const char *path;    /* a path pattern (checked by the caller); NULL: the held path exactly */
    const char *methods; /* "GET,POST"; NULL: the held request's method */
    unsigned draft;      /* persist: the entry's ID in the drafts file */
} px_hold_grant_t;

/* Why px_hold_add() did not hold a request: 0 held, else one of these (positive). */
enum {
    PX_HOLD_OVER_SCOPE_COUNT = 1,
    PX_HOLD_OVER_SCOPE_BYTES,
    PX_HOLD_OVER_PROCESS_COUNT,
    PX_HOLD_OVER_PROCESS_BYTES,
};

typedef void (*px_hold_cb)(px_hold_wait_t *w);

/* One held request, embedded in its owner (zeroed). The table keeps it from px_hold_add() until
 * px_hold_cancel(); its callback fires once, from px_hold_decide()/px_hold_expire(), with
 * outcome set (the owner should defer its work to the loop). */
struct px_hold_wait {
    px_hold_wait_t *next, *prev; /* every waiter of the table */
    px_hold_wait_t *qnext;       /* the waiters of its question */
    px_hold_q_t *q;              /* NULL once decided */
    const void *owner;           /* what px_hold_find() looks up */
    size_t bytes;
    px_hold_cb cb;
    px_hold_outcome_t outcome;
    uint64_t id;   /* its question's */
    char by[48];   /* who decided ("uid 1000", "timeout") */
    int rule_made; /* the approval left a rule: PX_HOLD_SCOPE_CONVERSATION or _PERSIST */
};

/* What a listing and the observer see of a question (borrowed for the call). */
typedef struct px_hold_info {
    uint64_t id;
    const char *scope_name; /* "-" for the one conversation */
    const void *scope;
    const char *method, *host, *path;
    uint64_t created_ms, deadline_ms;
    size_t waiters;
    size_t bytes;
} px_hold_info_t;

/* Events for deciders (the control socket): a new question, a decided one (outcome, by), one
 * whose requests all went away (outcome PENDING, by "gone"). */
typedef void (*px_hold_observer_cb)(void *arg, const px_hold_info_t *q, px_hold_outcome_t outcome,
                                    const char *by);
/* Called for each approval or denial (not time-outs) so it can be audited: the scope's key;
 * conversation is the approval's PX_HOLD_SCOPE_* (0 for a denial). */
typedef void (*px_hold_audit_cb)(void *arg, const px_hold_info_t *q, px_hold_outcome_t outcome,
                                 const char *by, int conversation);

/* A new empty table, or NULL when out of memory. */
px_hold_t *px_hold_new(void);
/* Frees t and its questions and rules; waiters left are forgotten (their owners are gone). */
void px_hold_free(px_hold_t *t);

/* Starts the time-out timer on loop uv (0 or a libuv code); px_hold_close() closes it and frees
 * t in the close callback. */
int px_hold_start(px_hold_t *t, uv_loop_t *uv);
void px_hold_close(px_hold_t *t);

/* Names a conversation for the listings (a sandbox's name), or NULL: "-". Asked once per new
 * question whose px_hold_add() gave no name. */
typedef const char *(*px_hold_namer_cb)(void *arg, const void *scope);

void px_hold_set_observer(px_hold_t *t, px_hold_observer_cb cb, void *arg);
/* A second observer, told the same events after the first: the decision webhook. */
void px_hold_set_decider(px_hold_t *t, px_hold_observer_cb cb, void *arg);
void px_hold_set_namer(px_hold_t *t, px_hold_namer_cb cb, void *arg);
void px_hold_set_audit(px_hold_t *t, px_hold_audit_cb cb, void *arg);
/* The audit callback the engine registers: each approval and denial as a DECISION event in the
 * conversation's network log (the table's scope is that px_log_t), whoever decided (the
 * control socket, the webhook). */
void px_hold_audit_line(void *arg, const px_hold_info_t *q, px_hold_outcome_t outcome,
                        const char *by, int conversation);

/* Holds w (owner, bytes and cb set by the caller) for scope (a key: the conversation; name
 * borrowed, copied) on the question (method, host, path) (copied, cut at their caps), joining an
 * identical pending one or asking a new one that times out hold_ms after now. 0 (held: w->id is
 * the question's), a PX_HOLD_OVER_* bound (not held), or PX_ENOMEM. */
int px_hold_add(px_hold_t *t, const void *scope, const char *scope_name, const char *method,
                const char *host, const char *path, uint64_t hold_ms, uint64_t now,
                px_hold_wait_t *w);

/* Answers question id: every waiter's callback fires with outcome; approved with conversation
 * 1 also leaves an allow rule for its scope. by (borrowed) names who. The number of requests
 * answered, or PX_ENOENT (no such pending question). */
int px_hold_decide(px_hold_t *t, uint64_t id, px_hold_outcome_t outcome, int conversation,
                   const char *by);

/* Approves question id with grant g (borrowed): as px_hold_decide(), a rule per g->scope. */
int px_hold_approve(px_hold_t *t, uint64_t id, const px_hold_grant_t *g, const char *by);

/* Copies what a listing sees of pending question id into *out (its strings borrowed until the
 * question is decided): 0 or PX_ENOENT. */
int px_hold_get(const px_hold_t *t, uint64_t id, px_hold_info_t *out);

/* Drops the rules persist approval draft (its drafts file entry was removed) left in the
 * conversation named scope_name ("-" for the one conversation); returns how many. */
size_t px_hold_forget(px_hold_t *t, const char *scope_name, unsigned draft);

/* Times out the questions whose deadline passed; returns how many. */
size_t px_hold_expire(px_hold_t *t, uint64_t now);

/* w's request went away or was answered: the table lets go of it (a question left without
 * requests is dropped). Safe on a waiter that was never added or already let go. */
void px_hold_cancel(px_hold_t *t, px_hold_wait_t *w);

/* The waiter whose owner is owner, or NULL (no cost when nothing is held). */
px_hold_wait_t *px_hold_find(const px_hold_t *t, const void *owner);

/* 1 when an approval with scope conversation or persist allows (method, host, path) for scope:
 * its method list holds method, and its path is path exactly, or its pattern matches path with
 * or without the query. */
int px_hold_allowed(const px_hold_t *t, const void *scope, const char *method, const char *host,
                    const char *path);

/* Calls fn on each pending question, oldest first. */
void px_hold_each(const px_hold_t *t, void (*fn)(void *arg, const px_hold_info_t *q), void *arg);

/* Held requests and bytes in all, and the pending questions. */
size_t px_hold_count(const px_hold_t *t);
size_t px_hold_bytes(const px_hold_t *t);
size_t px_hold_questions(const px_hold_t *t);

/* The text of a PX_HOLD_OVER_* bound ("conversation hold count 32"), into buf; returns buf. */
const char *px_hold_bound_text(int over, char *buf, size_t len);

/* The loop's time in ms now (uv_now), for callers that hold. */
uint64_t px_hold_now(const px_hold_t *t);

#endif
