/* The proxy's store of values fetched from AWS for "value_from" (Secrets Manager, SSM;
 * docs/replacements.md). The replacements loader asks it for each AWS source
 * (addon_awssecret_set_lookup); a value it does not hold for this load yet is recorded as
 * wanted, the load is dropped, the wanted values are fetched with the upstream client, and the
 * load runs again: so the policy that goes in always has values fetched for it (at start-up
 * and on SIGHUP anew), and a failed fetch fails that load naming the entry.
 *
 * Afterwards each value is fetched again every refresh_seconds in the background; requests go
 * on with the snapshot they hold. A changed value reloads the configuration (the same load as
 * SIGHUP, with the values in the store). A failed fetch is one stderr line (the source and the
 * cause, never a value) and is retried with exponential backoff, capped at refresh_seconds. */
#ifndef PX_SECRETFETCH_H
#define PX_SECRETFETCH_H

#include "proxy/px_config.h"

typedef struct px_secretfetch px_secretfetch_t;
typedef struct px_snapshot px_snapshot_t;
typedef struct px_upmgr px_upmgr_t;
typedef struct px_loop px_loop_t;

/* A load ended: n is the new snapshot (taken), or NULL when the load failed (said on stderr). */
typedef void (*px_secretfetch_load_cb)(void *arg, px_snapshot_t *n);

/* A new store on loop, registered as the loader's lookup; on_changed(arg) comes from the loop
 * when a refreshed value changed. NULL when out of memory. */
px_secretfetch_t *px_secretfetch_new(px_loop_t *loop, void (*on_changed)(void *arg), void *arg);

/* The upstream pool the fetches go through (borrowed; set before any fetch). */
void px_secretfetch_set_upmgr(px_secretfetch_t *sf, px_upmgr_t *up);

/* Loads the configuration (px_snapshot_load, startup messages), fetching first what it needs;
 * runs the loop until the fetches end. For start-up, before the loop serves. 0 and *out, or
 * a negative code (said on stderr). */
int px_secretfetch_load_sync(px_secretfetch_t *sf, const px_config_t *cfg, px_snapshot_t **out);

/* 1 when the last load used a stand-in for a value not fetched yet (its snapshot must go). */
int px_secretfetch_wanted(const px_secretfetch_t *sf);

/* Loads the configuration again (fresh: every value fetched anew, as on SIGHUP; else the values
 * in the store). done runs once, from here when nothing had to be fetched, else from the loop.
 * A load asked while one is under way runs after it (done then runs for each). */
void px_secretfetch_load(px_secretfetch_t *sf, const px_config_t *cfg, int fresh,
                         px_secretfetch_load_cb done, void *arg);

/* The last load went in: sources it did not name stop being refreshed. */
void px_secretfetch_commit(px_secretfetch_t *sf);

/* Stops every fetch and timer (shutdown); the store answers no more lookups. */
void px_secretfetch_close(px_secretfetch_t *sf);

/* Frees a closed store, once the loop ran its close callbacks. NULL is allowed. */
void px_secretfetch_free(px_secretfetch_t *sf);

#endif
