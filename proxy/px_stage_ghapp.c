/* The GitHub App stage of an exchange (px_stage.h; reference §4.5), a credential stage: a request
 * carrying an in-scope github-app surrogate gets the entry's installation token, from the entry's
 * cache or from a token request to {base_url}/app/installations/{id}/access_tokens made here with
 * the upstream client. One token request per entry at a time: exchanges that need the token while
 * it is under way wait on it (a list), and all resume when it ends. The exchange's request body is
 * paused meanwhile. After a token request the same job fetches the installation's
 * repositories page by page (GraphQL repository scoping): requests to .../graphql have their
 * body gathered first, then checked against them before the token goes in (addon_ghscope.h).
 * The JWT and the token never reach the log or stderr: a failure is logged with its cause
 * (status, connection error, parse error) only. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "addons/addon_ghapp.h"
#include "addons/addon_ghrepos.h"
#include "addons/addon_ghscope.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_xchg_int.h"

/* An entry's cached token and repositories are read and set by every loop (--workers): under
 * this lock, never held across I/O. A job runs on the loop that started it, and only that
 * loop's requests wait for it (px__pending: the loop's jobs), so each loop asks at most once
 * at a time per entry. */
static pthread_mutex_t px__gh_mu = PTHREAD_MUTEX_INITIALIZER;

typedef enum { PX__GH_MINT = 0, PX__GH_REPOS } px__ghphase_t;

/* One job per entry: a token request (unless the cached token is still good and only the
 * repositories are missing), then the pages of the installation's repositories. */
typedef struct px__ghmint {
    addon_replacements_t *repl; /* a reference: the entry lives while the request does */
    addon_ghapp_t *g;
    px_loop_t *loop;
    px_upreq_t *up;
    uv_timer_t timer;
    px__ghphase_t phase;
    int minted; /* a new token is in tok */
    int status;
    char *resp;
    size_t resp_len, resp_cap;
    int over;
    char tok[ADDON_GHAPP_TOKEN_MAX + 1];
    size_t toklen;
    int64_t expires;
    unsigned page;
    addon_ghrepos_t *repos; /* gathered so far */
    px_defer_t next;        /* the next page is asked from the loop, outside the last one's end */
    px_xchg_t *waiters;
    struct px__ghmint *pnext; /* the loop's jobs under way */
} px__ghmint_t;

static __thread px__ghmint_t *px__pending; /* this loop's jobs under way */

static px__ghmint_t *px__pending_for(const addon_ghapp_t *g)
{
    for (px__ghmint_t *mt = px__pending; mt != NULL; mt = mt->pnext)
        if (mt->g == g)
            return mt;
    return NULL;
}

static void px__pending_drop(px__ghmint_t *mt)
{
    for (px__ghmint_t **p = &px__pending; *p != NULL; p = &(*p)->pnext) {
        if (*p == mt) {
            *p = mt->pnext;
            break;
        }
    }
    mt->pnext = NULL;
}

static void on_mint_closed(uv_handle_t *h)
{
    px__ghmint_t *mt = h->data;
    if (mt->resp != NULL)
        OPENSSL_cleanse(mt->resp, mt->resp_len);
    OPENSSL_cleanse(mt->tok, sizeof(mt->tok));
    free(mt->resp);
    addon_ghrepos_free(mt->repos);
    addon_replacements_unref(mt->repl);
    free(mt);
}

static void on_waiter_resume(px_defer_t *d)
{
    px_xchg_t *x = px_container_of(d, px_xchg_t, gh.resume);
    if (x->finished)
        return;
    if (x->gh.paused) {
        x->gh.paused = 0;
        x->body_paused = 0;
        x->ops->pause_body(x->down, 0);
    }
    px_stage_resume(x); /* the stage runs again: the token goes in */
}

/* The repositories could not be fetched: the reference's loud line, once per network log. */
static void px__repos_failed(px__ghmint_t *mt, const char *why)
{
    for (px_xchg_t *x = mt->waiters; x != NULL; x = x->gh.next) {
        int seen = 0;
        for (px_xchg_t *y = mt->waiters; y != x && !seen; y = y->gh.next)
            seen = y->log == x->log;
        if (!seen)
            addon_req_note(x->view, ADDON_NOTE_GHAPP_REPOS, NULL, 0, "%s", why);
    }
    addon_ghrepos_free(mt->repos);
    mt->repos = NULL;
}

/* The job ended: the token and the repositories (NULL: unknown) go to the cache, and every
 * waiter hears the outcome from the loop. why: NULL on success (of the token). */
static void px__mint_done(px__ghmint_t *mt, const char *why)
{
    if (mt->up != NULL) {
        px_up_abort(mt->up);
        mt->up = NULL;
    }
    px_defer_cancel(mt->loop, &mt->next);
    pthread_mutex_lock(&px__gh_mu);
    if (why == NULL && mt->minted)
        addon_ghapp_cache_set(mt->g, mt->tok, mt->toklen, mt->expires);
    if (why == NULL) {
        addon_ghapp_set_repos(mt->g, mt->repos); /* taken: NULL when the fetch failed */
        mt->repos = NULL;
    }
    pthread_mutex_unlock(&px__gh_mu);
    OPENSSL_cleanse(mt->tok, sizeof(mt->tok));
    px__pending_drop(mt);
    px_xchg_t *x = mt->waiters;
    mt->waiters = NULL;
    while (x != NULL) {
        px_xchg_t *next = x->gh.next;
        x->gh.next = NULL;
        x->gh.mint = NULL;
        x->gh.outcome = why != NULL ? PX__GH_FAILED : mt->minted ? PX__GH_REFRESHED : PX__GH_CACHED;
        snprintf(x->gh.why, sizeof(x->gh.why), "%s", why != NULL ? why : "");
        px_defer(&x->ctx->loop, &x->gh.resume, on_waiter_resume);
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
    size_t cap = mt->phase == PX__GH_MINT ? ADDON_GHAPP_BODY_MAX : ADDON_GHREPOS_PAGE_MAX;
    if (mt->over || len > cap - mt->resp_len) {
        mt->over = 1;
        return;
    }
    if (mt->resp_len + len > mt->resp_cap) {
        size_t n = mt->resp_cap ? mt->resp_cap : 16384;
        while (n < mt->resp_len + len)
            n *= 2;
        char *p = malloc(n);
        if (p == NULL) {
            mt->over = 1;
            return;
        }
        if (mt->resp != NULL) {
            memcpy(p, mt->resp, mt->resp_len);
            OPENSSL_cleanse(mt->resp, mt->resp_len);
            free(mt->resp);
        }
        mt->resp = p;
        mt->resp_cap = n;
    }
    memcpy(mt->resp + mt->resp_len, data, len);
    mt->resp_len += len;
}

static int px__repos_send(px__ghmint_t *mt, px_upmgr_t *upmgr);
static void on_repos_next(px_defer_t *d);

/* The upstream pool of a waiter (none left: nobody needs the answer). */
static px_upmgr_t *px__waiter_pool(const px__ghmint_t *mt)
{
    return mt->waiters != NULL ? mt->waiters->upmgr : NULL;
}

/* The token answer: kept in the job, then the repositories are fetched. */
static void px__mint_answer(px__ghmint_t *mt)
{
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
    const char *bad = NULL;
    if (addon_ghapp_parse_token(mt->resp, mt->resp_len, mt->tok, sizeof(mt->tok), &mt->expires,
                                &bad) != 0) {
        px__mint_done(mt, bad);
        return;
    }
    mt->toklen = strlen(mt->tok);
    mt->minted = 1;
    mt->phase = PX__GH_REPOS;
    mt->page = 1;
    px_defer(mt->loop, &mt->next, on_repos_next);
}

/* A page of the repositories: the next one, or the end of the job. */
static void px__repos_answer(px__ghmint_t *mt)
{
    char why[128];
    size_t got = 0;
    uint64_t total = 0;
    const char *bad = NULL;
    if (mt->status != 200) {
        snprintf(why, sizeof(why), "the repositories endpoint answered HTTP %d", mt->status);
        bad = why;
    } else if (mt->over) {
        bad = "a page of the repositories answer is over its cap";
    } else if (mt->repos == NULL && (mt->repos = addon_ghrepos_new()) == NULL) {
        bad = "out of memory";
    } else if (addon_ghrepos_page(mt->repos, mt->resp, mt->resp_len, &got, &total, &bad) == 0) {
        if (got == ADDON_GHREPOS_PER_PAGE && addon_ghrepos_count(mt->repos) < total &&
            mt->page < ADDON_GHREPOS_MAX_PAGES) {
            mt->page++;
            px_defer(mt->loop, &mt->next, on_repos_next);
            return;
        }
    }
    if (bad == NULL)
        addon_ghrepos_seal(mt->repos); /* unsorted when memory is short: still correct */
    else
        px__repos_failed(mt, bad);
    px__mint_done(mt, NULL);
}

static void on_repos_next(px_defer_t *d)
{
    px__ghmint_t *mt = px_container_of(d, px__ghmint_t, next);
    if (px__repos_send(mt, px__waiter_pool(mt)) == 0)
        return;
    px__repos_failed(mt, "the repositories request could not start");
    px__mint_done(mt, NULL);
}

static void on_mint_end(void *owner, const px_fields_t *t)
{
    (void)t;
    px__ghmint_t *mt = owner;
    px_up_done(mt->up);
    mt->up = NULL;
    if (mt->phase == PX__GH_MINT)
        px__mint_answer(mt);
    else
        px__repos_answer(mt);
}

static void on_mint_error(void *owner, const char *why)
{
    px__ghmint_t *mt = owner;
    mt->up = NULL; /* the upstream client let go of it already */
    if (mt->phase == PX__GH_REPOS)
        px__repos_failed(mt, why);
    px__mint_done(mt, mt->phase == PX__GH_REPOS ? NULL : why);
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

/* A request of the job took longer than the entry's "timeout" (addon_ghapp_timeout). */
static void on_mint_timer(uv_timer_t *t)
{
    px__ghmint_t *mt = t->data;
    char why[80];
    snprintf(why, sizeof(why), "%s timed out after %u s",
             mt->phase == PX__GH_REPOS ? "a repositories request" : "the token request",
             addon_ghapp_timeout(mt->g));
    if (mt->phase == PX__GH_REPOS) {
        px__repos_failed(mt, why);
        px__mint_done(mt, NULL);
        return;
    }
    px__mint_done(mt, why);
}

static void px__hdr(addon_req_t *h, const char *name, const char *value, size_t vlen)
{
    addon_header_t *f = &h->headers[h->nheaders++];
    f->name.base = name;
    f->name.len = strlen(name);
    f->value.base = value;
    f->value.len = vlen;
}

/* Sends one request of the job to the GitHub API: method path with auth (borrowed) and, for a
 * POST, body. The response is gathered anew; the entry's timeout restarts. 0, or a negative code
 * (nothing was sent; no callback comes). */
static int px__send(px__ghmint_t *mt, px_upmgr_t *upmgr, const char *method, const char *path,
                    const char *auth, size_t alen, const char *body, size_t blen)
{
    addon_req_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return PX_ENOMEM;
    const char *host = addon_ghapp_host(mt->g);
    uint16_t port = addon_ghapp_port(mt->g);
    char hosthdr[ADDON_GHAPP_HOST_MAX + 8];
    int hl = port == 443 ? snprintf(hosthdr, sizeof(hosthdr), "%s", host)
                         : snprintf(hosthdr, sizeof(hosthdr), "%s:%u", host, (unsigned)port);
    char clen[24];
    int cl = snprintf(clen, sizeof(clen), "%zu", blen);
    h->method.base = method;
    h->method.len = strlen(method);
    h->path.base = path;
    h->path.len = strlen(path);
    px__hdr(h, "Host", hosthdr, (size_t)hl);
    px__hdr(h, "Authorization", auth, alen);
    px__hdr(h, "Accept", "application/vnd.github+json", 27);
    px__hdr(h, "X-GitHub-Api-Version", "2022-11-28", 10);
    px__hdr(h, "User-Agent", "airlock/" AIRLOCK_VERSION, strlen("airlock/" AIRLOCK_VERSION));
    if (body != NULL) {
        px__hdr(h, "Content-Type", "application/json", 16);
        px__hdr(h, "Content-Length", clen, (size_t)cl);
    }
    mt->status = 0;
    mt->over = 0;
    if (mt->resp != NULL)
        OPENSSL_cleanse(mt->resp, mt->resp_len);
    mt->resp_len = 0;
    mt->up = px_up_open(upmgr, host, port, 1, h, body != NULL ? PX_UP_BODY_LENGTH : PX_UP_BODY_NONE,
                        0, &px__mint_cbs, mt);
    free(h);
    if (mt->up == NULL)
        return PX_ENOMEM;
    if (body != NULL)
        px_up_data(mt->up, body, blen);
    px_up_end(mt->up, NULL);
    uv_timer_start(&mt->timer, on_mint_timer, (uint64_t)addon_ghapp_timeout(mt->g) * 1000, 0);
    return 0;
}

/* Sends the token request: POST {path} with the app JWT and the configured scoping. */
static int px__mint_send(px__ghmint_t *mt, px_upmgr_t *upmgr)
{
    char *auth = malloc(ADDON_GHAPP_JWT_MAX + 16);
    char *body = NULL;
    size_t blen = 0, jlen = 0;
    int rc = auth == NULL ? PX_ENOMEM : 0;
    if (rc == 0) {
        memcpy(auth, "Bearer ", 7);
        rc = addon_ghapp_jwt(mt->g, (int64_t)time(NULL), auth + 7, ADDON_GHAPP_JWT_MAX, &jlen);
    }
    if (rc == 0)
        rc = addon_ghapp_mint_body(mt->g, &body, &blen);
    if (rc == 0)
        rc = px__send(mt, upmgr, "POST", addon_ghapp_token_path(mt->g), auth, 7 + jlen, body, blen);
    if (auth != NULL)
        OPENSSL_cleanse(auth, ADDON_GHAPP_JWT_MAX + 16);
    free(auth);
    free(body);
    return rc;
}

/* Sends the request for page mt->page of the repositories, with the installation token,
 * through upmgr (NULL: nobody waits any more, nothing is sent). */
static int px__repos_send(px__ghmint_t *mt, px_upmgr_t *upmgr)
{
    if (upmgr == NULL)
        return PX_ENOENT;
    char path[2048];
    char auth[ADDON_GHAPP_TOKEN_MAX + 8];
    int rc = addon_ghapp_repos_path(mt->g, mt->page, path, sizeof(path));
    if (rc != 0)
        return rc;
    int al = snprintf(auth, sizeof(auth), "Bearer %s", mt->tok);
    rc = px__send(mt, upmgr, "GET", path, auth, (size_t)al, NULL, 0);
    OPENSSL_cleanse(auth, sizeof(auth));
    return rc;
}

/* x waits for entry g's job: it joins the one under way or starts one, a token request then
 * the repositories, or (repos_only: the cached token is good) the repositories alone. 0, or a
 * negative code (nothing could start: x does not wait). */
static int px__wait(px_xchg_t *x, addon_ghapp_t *g, addon_replacements_t *repl, int repos_only)
{
    px__ghmint_t *mt = px__pending_for(g);
    if (mt == NULL) {
        mt = calloc(1, sizeof(*mt));
        if (mt == NULL)
            return PX_ENOMEM;
        mt->g = g;
        mt->loop = &x->ctx->loop;
        uv_timer_init(x->ctx->loop.uv, &mt->timer);
        mt->timer.data = mt;
        int rc;
        if (repos_only) {
            size_t tl = 0;
            pthread_mutex_lock(&px__gh_mu);
            const char *t = addon_ghapp_cache_token(g, &tl);
            memcpy(mt->tok, t, tl);
            pthread_mutex_unlock(&px__gh_mu);
            mt->toklen = tl;
            mt->phase = PX__GH_REPOS;
            mt->page = 1;
            rc = px__repos_send(mt, x->upmgr);
        } else {
            rc = px__mint_send(mt, x->upmgr);
        }
        if (rc != 0) {
            uv_close((uv_handle_t *)&mt->timer, on_mint_closed);
            return rc;
        }
        mt->repl = addon_replacements_ref(repl);
        mt->pnext = px__pending;
        px__pending = mt;
    }
    x->gh.mint = mt;
    x->gh.next = mt->waiters;
    mt->waiters = x;
    if (x->rq == PX__RQ_BODY && !x->body_paused) {
        x->gh.paused = 1;
        x->body_paused = 1;
        x->ops->pause_body(x->down, 1);
    }
    return 0;
}

/* The entry's token goes into the request, or the exchange answers. A GraphQL request
 * (scoped) is first checked against the installation's repositories, on its gathered body.
 * 0 or 1 (answered). */
static int px__inject_locked(px_xchg_t *x, const addon_replacements_t *repl, size_t i,
                             addon_ghapp_t *g, int scoped);

static int px__inject(px_xchg_t *x, const addon_replacements_t *repl, size_t i, addon_ghapp_t *g,
                      int scoped)
{
    pthread_mutex_lock(&px__gh_mu); /* the token and the repositories, read in place */
    int rc = px__inject_locked(x, repl, i, g, scoped);
    pthread_mutex_unlock(&px__gh_mu);
    return rc;
}

static int px__inject_locked(px_xchg_t *x, const addon_replacements_t *repl, size_t i,
                             addon_ghapp_t *g, int scoped)
{
    addon_req_t *r = x->view;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    size_t tl = 0;
    const char *tok = addon_ghapp_cache_token(g, &tl);
    if (x->gh.outcome == PX__GH_FAILED || tl == 0) {
        addon_ghapp_refresh_failed(r, &ans, x->gh.why[0] ? x->gh.why : "no token");
        px__x_addon_answer(x, &ans);
        return 1;
    }
    if (scoped &&
        addon_ghapp_graphql_scope(r, addon_ghapp_repos(g), x->gath.body, x->gath.len, &ans) != 0) {
        px__x_addon_answer(x, &ans);
        return 1;
    }
    int flags = (x->gh.outcome == PX__GH_REFRESHED ? ADDON_GHAPP_REFRESHED : 0) |
                (scoped ? ADDON_GHAPP_SCOPED : 0);
    int rc = addon_ghapp_apply(r, repl, i, tok, tl, flags);
    if (rc == 0)
        return 0;
    px__x_log(x, "ERROR", 502, " (GitHub App credential replacement failed)");
    px__x_answer_error(x, 502, "masking_failed",
                       "airlock could not apply credential masking to this request", 1);
    return 1;
}

/* A GraphQL request with the App's surrogate: the body is gathered whole (up to the GraphQL
 * cap) as for a body filter, and the stage runs again once the filters passed it (the pipeline
 * passes over the credential stages until then). The exchange goes on from the loop. */
static int px__gather(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    if (r->filter_cap < ADDON_GHSCOPE_BODY_CAP)
        r->filter_cap = ADDON_GHSCOPE_BODY_CAP;
    if (x->rq == PX__RQ_BODY && !x->body_paused) {
        x->gh.paused = 1;
        x->body_paused = 1;
        x->ops->pause_body(x->down, 1);
    }
    px_defer(&x->ctx->loop, &x->gh.resume, on_waiter_resume);
    return PX_STAGE_WAIT;
}

/* When the request carries an in-scope github-app surrogate, the installation token goes in
 * (CONTINUE), the exchange answers (REFUSE: a refresh failure, plain http), or it waits for the
 * token (WAIT; px_stage_resume() runs it again). Otherwise foreign credentials are stripped as
 * the entry says. */
static int on_head(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    if (r->credentials_done || r->config == NULL || r->config->replacements == NULL)
        return PX_STAGE_CONTINUE;
    addon_replacements_t *repl = r->config->replacements;
    int i = addon_ghapp_match(repl, r);
    if (i < 0) {
        addon_ghapp_strip_foreign(r, repl);
        return PX_STAGE_CONTINUE;
    }
    addon_answer_t gq;
    memset(&gq, 0, sizeof(gq));
    if (addon_ghapp_graphql_query(r, &gq)) {
        px__x_addon_answer(x, &gq);
        return PX_STAGE_REFUSE;
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
        return PX_STAGE_REFUSE;
    }
    int scoped = addon_ghapp_graphql_path(r);
    if (scoped && !x->gath.filtered)
        return px__gather(x); /* the scope is read from the body: gather it first */
    addon_ghapp_t *g = addon_replacements_ghapp(repl, (size_t)i);
    if (x->gh.outcome == 0) {
        pthread_mutex_lock(&px__gh_mu);
        int valid = addon_ghapp_cache_valid(g, (int64_t)time(NULL));
        int no_repos = addon_ghapp_repos(g) == NULL;
        pthread_mutex_unlock(&px__gh_mu);
        if (valid && !(scoped && no_repos)) {
            x->gh.outcome = PX__GH_CACHED;
        } else if (px__wait(x, g, repl, valid) == 0) {
            return PX_STAGE_WAIT;
        } else if (valid) {
            x->gh.outcome = PX__GH_CACHED; /* the repositories stay unknown: refused below */
        } else {
            x->gh.outcome = PX__GH_FAILED;
            snprintf(x->gh.why, sizeof(x->gh.why), "the token request could not start");
        }
    }
    return px__inject(x, repl, (size_t)i, g, scoped) ? PX_STAGE_REFUSE : PX_STAGE_CONTINUE;
}

/* The body gathered for a GraphQL request carrying a github-app surrogate went over the
 * GraphQL cap: 1 and ans filled (403 graphql_repo_scope_blocked), else 0. */
static int on_body_over(px_xchg_t *x, addon_answer_t *ans)
{
    addon_req_t *r = x->view;
    if (r->filter_cap == 0 || r->credentials_done || r->config == NULL ||
        r->config->replacements == NULL || !addon_ghapp_graphql_path(r) ||
        addon_ghapp_match(r->config->replacements, r) < 0)
        return 0;
    memset(ans, 0, sizeof(*ans));
    return addon_ghapp_graphql_scope(r, NULL, NULL, x->gath.len, ans);
}

/* The exchange is released: it stops waiting for a token. */
static void on_end(px_xchg_t *x)
{
    px_defer_cancel(&x->ctx->loop, &x->gh.resume);
    px__ghmint_t *mt = x->gh.mint;
    if (mt == NULL)
        return;
    for (px_xchg_t **p = &mt->waiters; *p != NULL; p = &(*p)->gh.next) {
        if (*p == x) {
            *p = x->gh.next;
            break;
        }
    }
    x->gh.mint = NULL;
    x->gh.next = NULL;
    if (mt->waiters == NULL && x->ctx->stopping)
        px__mint_done(mt, "airlock is shutting down"); /* nobody waits: the loop may end */
}

const px_stage_t px_stage_ghapp = {.name = "ghapp",
                                   .flags = PX_STAGE_AFTER_FILTERS,
                                   .on_head = on_head,
                                   .on_body_over = on_body_over,
                                   .on_end = on_end};
