/* An exchange's WebSocket upgrade: the offer of extensions is taken out of the request while the
 * secret guard is on (a compressed frame, permessage-deflate, could not be scanned), and after
 * the 101 the tunnel gets its guard (proxy/px_tunguard.c): the exchange's byte budgets go on
 * counting on it, and the client's frames are scanned. */
#include <stdio.h>
#include <strings.h>

#include "proxy/px_policy.h"
#include "proxy/px_tunguard.h"
#include "proxy/px_xchg_int.h"

void px__x_ws_prepare(px_xchg_t *x)
{
    if (!x->upgrade || x->snap == NULL || x->snap->leak == NULL)
        return;
    addon_req_t *r = x->view;
    for (size_t i = 0; i < r->nheaders; i++) {
        addon_header_t *h = &r->headers[i];
        if (h->name.len == 24 && strncasecmp(h->name.base, "sec-websocket-extensions", 24) == 0)
            h->removed = 1;
    }
}

int px__x_ws_guard(px_xchg_t *x, px_tunnel_t *t)
{
    addon_budget_req_t *bud = px__x_budget_take(x);
    char line[PX_TUNGUARD_LINE_MAX];
    snprintf(line, sizeof(line), "%s %.2100s -> 101", x->method,
             x->pre.url[0] != '\0' ? x->pre.url : "-");
    return px_tunguard_ws(t, x->log, line, x->snap, bud, x->snap != NULL ? x->snap->leak : NULL);
}
