/* The GitHub App stage of an exchange (reference §4.5): a request carrying an in-scope
 * github-app surrogate gets the entry's installation token, from the entry's cache or from a
 * token request to {base_url}/app/installations/{id}/access_tokens made here with the upstream
 * client. One token request per entry at a time: exchanges that need the token while it is
 * under way wait on it (a list), and all resume when it ends. The exchange's request body is
 * paused meanwhile. The JWT and the token never reach the log or stderr: a failure is logged
 * with its cause (status, connection error, parse error) only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "addons/addon_ghapp.h"
#include "addons/addon_masking.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"
#include "proxy/px_engine.h"
#include "proxy/px_xchg_int.h"

#define PX__GH_TIMEOUT_MS 30000 /* the whole token request (the reference's HTTP timeout) */

typedef struct px__ghmint {
    addon_replacements_t *repl; /* a reference: the entry lives while the request does */
    addon_ghapp_t *g;
    px_loop_t *loop;
    px_upreq_t *up;
    uv_timer_t timer;
    int status;
    char *resp;
    size_t resp_len;
    int over;
    px_xchg_t *waiters;
} px__ghmint_t;

static void on_mint_closed(uv_handle_t *h)
{
    px__ghmint_t *mt = h->data;
    if (mt->resp != NULL)
        OPENSSL_cleanse(mt->resp, mt->resp_len);
    free(mt->resp);
    addon_replacements_unref(mt->repl);
    free(mt);
}

static void on_waiter_resume(px_defer_t *d)
{
    px_xchg_t *x = px_container_of(d, px_xchg_t, gh_resume);
    if (x->finished)
        return;
    if (x->gh_paused) {
        x->gh_paused = 0;
        x->body_paused = 0;
        x->ops->pause_body(x->down, 0);
    }
    px__x_continue(x);
}

/* The token request ended: every waiter hears the outcome from the loop. why: NULL on success. */
static void px__mint_done(px__ghmint_t *mt, const char *why)
{
    if (mt->up != NULL) {
        px_up_abort(mt->up);
        mt->up = NULL;
    }
    addon_ghapp_set_pending(mt->g, NULL);
    px_xchg_t *x = mt->waiters;
    mt->waiters = NULL;
    while (x != NULL) {
        px_xchg_t *next = x->gh_next;
        x->gh_next = NULL;
        x->gh_mint = NULL;
        x->gh_outcome = why == NULL ? PX__GH_REFRESHED : PX__GH_FAILED;
        snprintf(x->gh_why, sizeof(x->gh_why), "%s", why != NULL ? why : "");
        px_defer(&x->eng->loop, &x->gh_resume, on_waiter_resume);
        x = next;
    }
    uv_timer_stop(&mt->timer);
    uv_close((uv_handle_t *)&mt->timer, on_mint_closed);
}

static void on_mint_head(void *owner, px_msg_t *m)
{
    px__ghmint_t *mt = owner;
    if (m->status >= 200)
        mt->status = m->status;
    px_msg_free(m);
}

static void on_mint_data(void *owner, const char *data, size_t len)
{
    px__ghmint_t *mt = owner;
    if (mt->over || len > ADDON_GHAPP_BODY_MAX - mt->resp_len) {
        mt->over = 1;
        return;
    }
    memcpy(mt->resp + mt->resp_len, data, len);
    mt->resp_len += len;
}

static void on_mint_end(void *owner, const px_fields_t *t)
{
    (void)t;
    px__ghmint_t *mt = owner;
    px_up_done(mt->up);
    mt->up = NULL;
    char why[128];
    if (mt->status != 201 && mt->status != 200) {
        snprintf(why, sizeof(why), "the token endpoint answered HTTP %d", mt->status);
        px__mint_done(mt, why);
        return;
    }
    if (mt->over) {
        px__mint_done(mt, "the token endpoint's answer is over 64 KiB");
        return;
    }
    char tok[ADDON_GHAPP_TOKEN_MAX + 1];
    int64_t expires = 0;
    const char *bad = NULL;
    if (addon_ghapp_parse_token(mt->resp, mt->resp_len, tok, sizeof(tok), &expires, &bad) != 0) {
        OPENSSL_cleanse(tok, sizeof(tok));
        px__mint_done(mt, bad);
        return;
    }
    addon_ghapp_cache_set(mt->g, tok, strlen(tok), expires);
    OPENSSL_cleanse(tok, sizeof(tok));
    px__mint_done(mt, NULL);
}

static void on_mint_error(void *owner, const char *why)
{
    px__ghmint_t *mt = owner;
    mt->up = NULL; /* the upstream client let go of it already */
    px__mint_done(mt, why);
}

static void on_mint_drain(void *owner)
{
    (void)owner;
}

static const px_up_cbs_t px__mint_cbs = {
    .on_head = on_mint_head,
    .on_data = on_mint_data,
    .on_end = on_mint_end,
    .on_error = on_mint_error,
    .on_drain = on_mint_drain,
};

static void on_mint_timer(uv_timer_t *t)
{
    px__ghmint_t *mt = t->data;
    px__mint_done(mt, "the token request timed out after 30 s");
}

static void px__hdr(addon_req_t *h, const char *name, const char *value, size_t vlen)
{
    addon_header_t *f = &h->headers[h->nheaders++];
    f->name.base = name;
    f->name.len = strlen(name);
    f->value.base = value;
    f->value.len = vlen;
}

/* Sends the token request: POST {path} with the app JWT and the configured scoping. 0, or a
 * negative code (nothing was sent; no callback comes). */
static int px__mint_send(px__ghmint_t *mt, px_upmgr_t *upmgr)
{
    addon_req_t *h = calloc(1, sizeof(*h));
    char *auth = malloc(ADDON_GHAPP_JWT_MAX + 16);
    char *body = NULL;
    size_t blen = 0, jlen = 0;
    int rc = h == NULL || auth == NULL ? PX_ENOMEM : 0;
    if (rc == 0) {
        memcpy(auth, "Bearer ", 7);
        rc = addon_ghapp_jwt(mt->g, (int64_t)time(NULL), auth + 7, ADDON_GHAPP_JWT_MAX, &jlen);
    }
    if (rc == 0)
        rc = addon_ghapp_mint_body(mt->g, &body, &blen);
    if (rc == 0) {
        const char *host = addon_ghapp_host(mt->g);
        uint16_t port = addon_ghapp_port(mt->g);
        char hosthdr[ADDON_GHAPP_HOST_MAX + 8];
        int hl = port == 443 ? snprintf(hosthdr, sizeof(hosthdr), "%s", host)
                             : snprintf(hosthdr, sizeof(hosthdr), "%s:%u", host, (unsigned)port);
        char clen[24];
        int cl = snprintf(clen, sizeof(clen), "%zu", blen);
        h->method.base = "POST";
        h->method.len = 4;
        h->path.base = addon_ghapp_token_path(mt->g);
        h->path.len = strlen(h->path.base);
        px__hdr(h, "Host", hosthdr, (size_t)hl);
        px__hdr(h, "Authorization", auth, 7 + jlen);
        px__hdr(h, "Accept", "application/vnd.github+json", 27);
        px__hdr(h, "X-GitHub-Api-Version", "2022-11-28", 10);
        px__hdr(h, "User-Agent", "airlock/" AIRLOCK_VERSION, strlen("airlock/" AIRLOCK_VERSION));
        px__hdr(h, "Content-Type", "application/json", 16);
        px__hdr(h, "Content-Length", clen, (size_t)cl);
        mt->up = px_up_open(upmgr, host, port, 1, h, PX_UP_BODY_LENGTH, 0, &px__mint_cbs, mt);
        if (mt->up == NULL) {
            rc = PX_ENOMEM;
        } else {
            px_up_data(mt->up, body, blen);
            px_up_end(mt->up, NULL);
        }
    }
    if (auth != NULL)
        OPENSSL_cleanse(auth, ADDON_GHAPP_JWT_MAX + 16);
    free(auth);
    free(body);
    free(h);
    return rc;
}

/* x waits for entry g's token: it joins the request under way or starts one. 0, or a negative
 * code (no request could start: the outcome is a failure, decided now). */
static int px__wait(px_xchg_t *x, addon_ghapp_t *g, addon_replacements_t *repl)
{
    px__ghmint_t *mt = addon_ghapp_pending(g);
    if (mt == NULL) {
        mt = calloc(1, sizeof(*mt));
        char *resp = malloc(ADDON_GHAPP_BODY_MAX);
        if (mt == NULL || resp == NULL) {
            free(mt);
            free(resp);
            return PX_ENOMEM;
        }
        mt->resp = resp;
        mt->g = g;
        mt->loop = &x->eng->loop;
        int rc = px__mint_send(mt, x->upmgr);
        if (rc != 0) {
            free(mt->resp);
            free(mt);
            return rc;
        }
        mt->repl = addon_replacements_ref(repl);
        uv_timer_init(x->eng->loop.uv, &mt->timer);
        mt->timer.data = mt;
        uv_timer_start(&mt->timer, on_mint_timer, PX__GH_TIMEOUT_MS, 0);
        addon_ghapp_set_pending(g, mt);
    }
    x->gh_mint = mt;
    x->gh_next = mt->waiters;
    mt->waiters = x;
    if (x->rq == PX__RQ_BODY && !x->body_paused) {
        x->gh_paused = 1;
        x->body_paused = 1;
        x->ops->pause_body(x->down, 1);
    }
    return 0;
}

/* The entry's token goes into the request, or the exchange answers. 0 or 1 (answered). */
static int px__inject(px_xchg_t *x, const addon_replacements_t *repl, size_t i, addon_ghapp_t *g)
{
    addon_req_t *r = x->view;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    size_t tl = 0;
    const char *tok = addon_ghapp_cache_token(g, &tl);
    if (x->gh_outcome == PX__GH_FAILED || tl == 0) {
        addon_ghapp_refresh_failed(r, &ans, x->gh_why[0] ? x->gh_why : "no token");
        px__x_addon_answer(x, &ans);
        return 1;
    }
    int rc = addon_ghapp_apply(r, repl, i, tok, tl, x->gh_outcome == PX__GH_REFRESHED);
    if (rc == 0)
        return 0;
    px__x_log(x, "ERROR", 502, " (GitHub App credential replacement failed)");
    px__x_answer_error(x, 502, "masking_failed",
                       "airlock could not apply credential masking to this request", 1);
    return 1;
}

int px__x_ghapp_stage(px_xchg_t *x, const addon_t *const *a)
{
    addon_req_t *r = x->view;
    if (*a != addon_masking() || r->credentials_done || r->config == NULL ||
        r->config->replacements == NULL)
        return 0;
    addon_replacements_t *repl = r->config->replacements;
    int i = addon_ghapp_match(repl, r);
    if (i < 0) {
        addon_ghapp_strip_foreign(r, repl);
        return 0;
    }
    addon_answer_t gq;
    memset(&gq, 0, sizeof(gq));
    if (addon_ghapp_graphql_query(r, &gq)) {
        px__x_addon_answer(x, &gq);
        return 1;
    }
    if (!r->tls) {
        addon_answer_t ans = {.status = 403,
                              .error = "credentials_require_https",
                              .with_request = 1,
                              .verdict = "BLOCKED"};
        snprintf(ans.message, sizeof(ans.message),
                 "This request carries a GitHub App credential that airlock only injects over "
                 "https, so the token never crosses the network in clear. Use https:// for "
                 "this host.");
        snprintf(ans.log_tail, sizeof(ans.log_tail), " (credential needs https)");
        px__x_addon_answer(x, &ans);
        return 1;
    }
    addon_ghapp_t *g = addon_replacements_ghapp(repl, (size_t)i);
    if (x->gh_outcome == 0) {
        if (addon_ghapp_cache_valid(g, (int64_t)time(NULL))) {
            x->gh_outcome = PX__GH_CACHED;
        } else if (px__wait(x, g, repl) == 0) {
            return 2;
        } else {
            x->gh_outcome = PX__GH_FAILED;
            snprintf(x->gh_why, sizeof(x->gh_why), "the token request could not start");
        }
    }
    return px__inject(x, repl, (size_t)i, g);
}

void px__x_ghapp_end(px_xchg_t *x)
{
    px_defer_cancel(&x->eng->loop, &x->gh_resume);
    px__ghmint_t *mt = x->gh_mint;
    if (mt == NULL)
        return;
    for (px_xchg_t **p = &mt->waiters; *p != NULL; p = &(*p)->gh_next) {
        if (*p == x) {
            *p = x->gh_next;
            break;
        }
    }
    x->gh_mint = NULL;
    x->gh_next = NULL;
    if (mt->waiters == NULL && x->eng->stopping)
        px__mint_done(mt, "airlock is shutting down"); /* nobody waits: the loop may end */
}
