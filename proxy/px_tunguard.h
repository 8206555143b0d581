/* The guard of a tunnel (docs/budgets.md, docs/leak-scanning.md): what keeps the egress budgets
 * and the secret guard in force once bytes are relayed unread.
 *
 * - Budgets: the bytes relayed from the client (side 0) count against the tunnel's matching
 *   `sent` budgets, those from the upstream (side 1) against its `received` ones, raw as they
 *   cross (WebSocket frames with their headers; a passthrough tunnel's TLS records). The piece
 *   that crosses a budget goes up to it, then the tunnel is cut and one line logged.
 * - WebSocket: the client's frames are read (base/px_wsframe.c) and their unmasked payloads
 *   scanned for the real values of secrets and canaries, one scan per message and one per
 *   control frame; the bytes that may still begin a value are held back until the next bytes
 *   show they do not. A match, or a frame airlock cannot read (RSV bits: compressed), closes
 *   both ends before the frame carrying it goes on (the client gets a close frame, 1008, when
 *   the upstream's frames to it are between two frames), and is logged by name, never by
 *   value.
 * - WebSocket, the other way: while the snapshot has a response scrubber, the upstream's frames
 *   are rewritten with every real value replaced by its surrogate (proxy/px_wsscrub.c, which
 *   writes whole frames only, so the client is always between two); a frame it cannot read
 *   closes the WebSocket as above. One line per read in which values were replaced, by name. */
#ifndef PX_TUNGUARD_H
#define PX_TUNGUARD_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"
#include "addons/addon_budget.h"
#include "addons/addon_leak.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "net/px_tunnel.h"

/* Held behind a possible secret, beyond the longest pattern: more than this many bytes of
 * frames (headers, control frames) while a value may have begun closes the WebSocket. */
#define PX_TUNGUARD_HOLD_EXTRA (64 * 1024)
#define PX_TUNGUARD_LINE_MAX 2200 /* "GET https://host/path -> 101" for the log lines */

/* Guards tunnel t after a WebSocket upgrade: line is the exchange's "METHOD URL -> 101"
 * (copied), log is borrowed for t's life, snap is referenced for t's life, bud (taken; NULL:
 * no byte budget) the exchange's counters, leak (from snap; NULL: nothing to scan); the
 * upstream's frames are scrubbed when snap->scrub is set. Without any of the three, t is left
 * as it is. 0, or PX_ENOMEM (bud is released then). */
int px_tunguard_ws(px_tunnel_t *t, px_log_t *log, const char *line, px_snapshot_t *snap,
                   addon_budget_req_t *bud, const addon_leak_t *leak);

/* A passthrough CONNECT to host (borrowed; url "host:port" for the log) under snap's budgets
 * (table *tab, made on first use) at now_ms: admitted as one request with a body of unknown
 * length. 0 and *out: a tunnel made ahead that counts its bytes (NULL when no byte budget
 * matches host; attach its ends later); 1: refused, the line logged and ans[0..*anslen) the
 * 429 answer to write; PX_ENOMEM. */
int px_tunguard_connect(px_log_t *log, addon_budget_table_t **tab, px_snapshot_t *snap,
                        const char *url, addon_str_t host, uint64_t now_ms, px_tunnel_t **out,
                        char *ans, size_t cap, size_t *anslen);

/* The JSON body of a 429 egress_budget_exceeded answer for o (declared: the body's length, or
 * 0/1 when unknown) into json; its length. */
size_t px_tunguard_budget_json(const addon_budget_over_t *o, uint64_t declared, char *json,
                               size_t cap);

#endif
