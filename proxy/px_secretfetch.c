/* The store of values fetched from AWS (px_secretfetch.h). Each source has one timer: the
 * request's timeout while a request is out, else the next refresh or retry. A source's value is
 * wiped when it changes and when the source is freed. */
#include "proxy/px_secretfetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "addons/addon_awssecret.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_upstream.h"

#define PX__SF_TIMEOUT_MS 30000   /* one request, connect to last byte */
#define PX__SF_ROUND_TRIES 4      /* tries of a load's fetch when AWS throttles or fails 5xx */
#define PX__SF_ROUND_RETRY_MS 250 /* first wait between those tries (doubles) */
#define PX__SF_BACKOFF_MS 5000    /* first wait after a failed background fetch (doubles) */
#define PX__SF_ROUNDS 4           /* fetch rounds of one load (the file may change meanwhile) */
/* stands in for a value not fetched yet; such a load is always dropped */
#define PX__SF_STANDIN "airlock-value-not-fetched-yet-0000000000000000"

typedef struct px__sfsrc px__sfsrc_t;
struct px__sfsrc {
    px__sfsrc_t *next;
    px_secretfetch_t *sf;
    int ssm, with_decryption;
    char *id, *region, *json_key; /* region, json_key may be NULL */
    unsigned refresh;             /* s */
    char value[ADDON_REPLACEMENTS_MAX_STRING];
    size_t vlen;
    int has_value;
    int failed; /* the last load's fetch failed: why */
    char why[384];
    unsigned result_gen; /* the generation of the value or failure */
    unsigned fetch_gen;  /* the generation the request under way was started in */
    unsigned seen;       /* the load that named it last */
    int in_round;        /* a load waits for it */
    unsigned tries;      /* failures in a row */
    px_upreq_t *up;
    int status;
    char *resp;
    size_t resp_len;
    int over;
    uv_timer_t timer;
};

struct px_secretfetch {
    px_loop_t *loop;
    px_upmgr_t *up;
    void (*on_changed)(void *arg);
    void *arg;
    px__sfsrc_t *list;
    unsigned gen;      /* moves on each fresh load */
    unsigned need_gen; /* a value older than this is fetched before the load counts */
    unsigned load_seq;
    size_t nwanted; /* sources the last load used a stand-in for */
    int closed;
    px_defer_t changed, round_end;
    /* the load under way */
    int busy, again_fresh, again;
    unsigned rounds;
    const px_config_t *cfg;
    px_secretfetch_load_cb done;
    void *done_arg;
    int sync_done;
};

static const char *px__sf_kind(const px__sfsrc_t *s)
{
    return s->ssm ? "aws_ssm" : "aws_secrets_manager";
}

static unsigned px__sf_refresh_ms(const px__sfsrc_t *s)
{
    /* tests only: a refresh period in milliseconds instead of refresh_seconds */
    const char *t = getenv("AIRLOCK_TEST_REFRESH_MS");
    if (t != NULL && atoi(t) > 0)
        return (unsigned)atoi(t);
    return s->refresh * 1000u;
}

static void on_sf_closed(uv_handle_t *h)
{
    px__sfsrc_t *s = h->data;
    OPENSSL_cleanse(s->value, sizeof(s->value));
    if (s->resp != NULL)
        OPENSSL_cleanse(s->resp, s->resp_len);
    free(s->resp);
    free(s->id);
    free(s->region);
    free(s->json_key);
    free(s);
}

static void px__sf_abort(px__sfsrc_t *s)
{
    if (s->up != NULL)
        px_up_abort(s->up);
    s->up = NULL;
}

static void on_sf_timer(uv_timer_t *t);
static void px__sf_fetch(px__sfsrc_t *s);

static void on_sf_round_end(px_defer_t *d);

/* A load waits for no source any more: it goes on from the loop. */
static void px__sf_round_check(px_secretfetch_t *sf)
{
    for (px__sfsrc_t *s = sf->list; s != NULL; s = s->next)
        if (s->in_round)
            return;
    px_defer(sf->loop, &sf->round_end, on_sf_round_end);
}

static void on_sf_changed(px_defer_t *d)
{
    px_secretfetch_t *sf = px_container_of(d, px_secretfetch_t, changed);
    if (!sf->closed && sf->on_changed != NULL)
        sf->on_changed(sf->arg);
}

/* A fetch ended: rc 0 with the value in value[0..vlen), or a failure (why; retry: worth asking
 * again soon). */
static void px__sf_result(px__sfsrc_t *s, int rc, const char *value, size_t vlen, int retry,
                          const char *why)
{
    px_secretfetch_t *sf = s->sf;
    unsigned ms;
    if (rc == 0) {
        int changed = !s->has_value || s->failed || vlen != s->vlen ||
                      CRYPTO_memcmp(value, s->value, vlen) != 0;
        OPENSSL_cleanse(s->value, sizeof(s->value));
        memcpy(s->value, value, vlen);
        s->vlen = vlen;
        s->has_value = 1;
        s->failed = 0;
        s->tries = 0;
        s->result_gen = s->fetch_gen;
        if (changed && !s->in_round && s->result_gen >= sf->need_gen)
            px_defer(sf->loop, &sf->changed, on_sf_changed);
        ms = px__sf_refresh_ms(s);
    } else {
        s->tries++;
        if (s->in_round && retry && s->tries < PX__SF_ROUND_TRIES) {
            px_diag(PX_DIAG_WARN, "value_from %s %s: %s; trying again", px__sf_kind(s), s->id, why);
            uv_timer_start(&s->timer, on_sf_timer, PX__SF_ROUND_RETRY_MS << (s->tries - 1), 0);
            return;
        }
        unsigned cap = px__sf_refresh_ms(s);
        unsigned base = cap < PX__SF_BACKOFF_MS ? cap : PX__SF_BACKOFF_MS;
        unsigned shift = s->tries - 1 < 16 ? s->tries - 1 : 16;
        ms = (uint64_t)base << shift > cap ? cap : base << shift;
        px_diag(PX_DIAG_ERROR, "value_from %s %s: fetch failed: %s; %s, next try in %u ms",
                px__sf_kind(s), s->id, why,
                s->in_round ? "the load that needs it fails" : "the cached value stays", ms);
        if (s->in_round) {
            s->failed = 1;
            snprintf(s->why, sizeof(s->why), "%s", why);
            s->result_gen = s->fetch_gen;
        }
    }
    if (s->in_round && s->result_gen < sf->need_gen) {
        px__sf_fetch(s); /* a refresh from before the load's start: the load wants a new one */
        return;
    }
    uv_timer_start(&s->timer, on_sf_timer, ms, 0);
    if (s->in_round) {
        s->in_round = 0;
        px__sf_round_check(sf);
    }
}

static void on_sf_head(void *owner, px_msg_t *m)
{
    px__sfsrc_t *s = owner;
    if (m->status >= 200)
        s->status = m->status;
    px_msg_free(m);
}

static void on_sf_data(void *owner, const char *data, size_t len)
{
    px__sfsrc_t *s = owner;
    if (s->over || len > ADDON_AWSSECRET_RESP_MAX - s->resp_len) {
        s->over = 1;
        return;
    }
    if (s->resp == NULL && (s->resp = malloc(ADDON_AWSSECRET_RESP_MAX)) == NULL) {
        s->over = 1;
        return;
    }
    memcpy(s->resp + s->resp_len, data, len);
    s->resp_len += len;
}

static void on_sf_end(void *owner, const px_fields_t *t)
{
    (void)t;
    px__sfsrc_t *s = owner;
    px_up_done(s->up);
    s->up = NULL;
    uv_timer_stop(&s->timer);
    char why[384];
    char *value = malloc(ADDON_REPLACEMENTS_MAX_STRING);
    size_t vlen = 0;
    int retry = 0, rc;
    addon_awssecret_src_t src = {.ssm = s->ssm,
                                 .id = s->id,
                                 .region = s->region,
                                 .json_key = s->json_key,
                                 .with_decryption = s->with_decryption};
    if (value == NULL) {
        rc = PX_ENOMEM;
        snprintf(why, sizeof(why), "out of memory");
    } else if (s->over) {
        rc = PX_ETOOBIG;
        snprintf(why, sizeof(why), "HTTP %d: the answer is over %d bytes", s->status,
                 ADDON_AWSSECRET_RESP_MAX);
    } else {
        rc = addon_awssecret_parse(&src, s->status, s->resp, s->resp_len, value,
                                   ADDON_REPLACEMENTS_MAX_STRING, &vlen, &retry, why, sizeof(why));
    }
    if (s->resp != NULL)
        OPENSSL_cleanse(s->resp, s->resp_len);
    free(s->resp); /* 256 KiB per source is not kept between fetches */
    s->resp = NULL;
    s->resp_len = 0;
    px__sf_result(s, rc, value, vlen, retry, why);
    if (value != NULL)
        OPENSSL_cleanse(value, ADDON_REPLACEMENTS_MAX_STRING);
    free(value);
}

static void on_sf_error(void *owner, const char *why)
{
    px__sfsrc_t *s = owner;
    s->up = NULL; /* the upstream client let go of it already */
    uv_timer_stop(&s->timer);
    px__sf_result(s, PX_EIO, NULL, 0, 1, why);
}

static void on_sf_drain(void *owner)
{
    (void)owner;
}

static const px_up_cbs_t px__sf_cbs = {
    .on_head = on_sf_head,
    .on_data = on_sf_data,
    .on_end = on_sf_end,
    .on_error = on_sf_error,
    .on_drain = on_sf_drain,
};

static void px__sf_hdr(addon_req_t *h, const char *name, const char *value, size_t vlen)
{
    addon_header_t *f = &h->headers[h->nheaders++];
    f->name.base = name;
    f->name.len = strlen(name);
    f->value.base = value;
    f->value.len = vlen;
}

/* Sends the signed request of s (the credentials are read anew each time: rotated keys are
 * picked up). A failure before anything is sent is a result like any other. */
static int px__sf_send(px__sfsrc_t *s, char *why, size_t whylen)
{
    addon_awssecret_creds_t *c = malloc(sizeof(*c));
    addon_awssecret_req_t *rq = malloc(sizeof(*rq));
    addon_req_t *h = calloc(1, sizeof(*h));
    int rc = c == NULL || rq == NULL || h == NULL ? PX_ENOMEM : 0;
    if (rc != 0)
        snprintf(why, whylen, "out of memory");
    if (rc == 0)
        rc = addon_awssecret_creds_load(c, why, whylen);
    addon_awssecret_src_t src = {.ssm = s->ssm,
                                 .id = s->id,
                                 .region = s->region,
                                 .json_key = s->json_key,
                                 .with_decryption = s->with_decryption};
    if (rc == 0)
        rc = addon_awssecret_request(&src, addon_awssecret_region(&src), c,
                                     addon_awssecret_endpoint_env(s->ssm), (int64_t)time(NULL), rq,
                                     why, whylen);
    if (rc == 0 && s->sf->up == NULL) {
        snprintf(why, whylen, "no upstream client yet");
        rc = PX_ESTATE;
    }
    if (rc == 0) {
        char clen[24];
        int cl = snprintf(clen, sizeof(clen), "%zu", rq->blen);
        h->method.base = "POST";
        h->method.len = 4;
        h->path.base = "/";
        h->path.len = 1;
        px__sf_hdr(h, "Host", rq->host_header, strlen(rq->host_header));
        px__sf_hdr(h, "Content-Type", ADDON_AWSSECRET_CONTENT_TYPE,
                   strlen(ADDON_AWSSECRET_CONTENT_TYPE));
        px__sf_hdr(h, "X-Amz-Date", rq->amz_date, 16);
        px__sf_hdr(h, "X-Amz-Target", rq->target, strlen(rq->target));
        if (c->token[0] != '\0')
            px__sf_hdr(h, "X-Amz-Security-Token", c->token, strlen(c->token));
        px__sf_hdr(h, "Authorization", rq->auth, rq->alen);
        px__sf_hdr(h, "User-Agent", "airlock/" AIRLOCK_VERSION, strlen("airlock/" AIRLOCK_VERSION));
        px__sf_hdr(h, "Content-Length", clen, (size_t)cl);
        s->status = 0;
        s->over = 0;
        s->resp_len = 0;
        s->up = px_up_open(s->sf->up, rq->host, rq->port, rq->tls, h, PX_UP_BODY_LENGTH, 0,
                           &px__sf_cbs, s);
        if (s->up == NULL) {
            snprintf(why, whylen, "out of memory");
            rc = PX_ENOMEM;
        } else {
            px_up_data(s->up, rq->body, rq->blen);
            px_up_end(s->up, NULL);
            uv_timer_start(&s->timer, on_sf_timer, PX__SF_TIMEOUT_MS, 0);
        }
    }
    if (c != NULL)
        addon_awssecret_creds_wipe(c);
    if (rq != NULL)
        OPENSSL_cleanse(rq, sizeof(*rq));
    free(c);
    free(rq);
    free(h);
    return rc;
}

static void px__sf_fetch(px__sfsrc_t *s)
{
    char why[384];
    uv_timer_stop(&s->timer);
    s->fetch_gen = s->sf->gen;
    if (px__sf_send(s, why, sizeof(why)) != 0)
        px__sf_result(s, PX_EIO, NULL, 0, 0, why);
}

static void on_sf_timer(uv_timer_t *t)
{
    px__sfsrc_t *s = t->data;
    if (s->up != NULL) {
        px__sf_abort(s);
        px__sf_result(s, PX_ETIMEOUT, NULL, 0, 1, "no answer within 30 s");
        return;
    }
    px__sf_fetch(s);
}

static int px__sf_streq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static char *px__sf_dup(const char *s, int *bad)
{
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        *bad = 1;
    return d;
}

static px__sfsrc_t *px__sf_find(px_secretfetch_t *sf, const addon_awssecret_src_t *src)
{
    for (px__sfsrc_t *s = sf->list; s != NULL; s = s->next)
        if (s->ssm == src->ssm && s->with_decryption == src->with_decryption &&
            strcmp(s->id, src->id) == 0 && px__sf_streq(s->region, src->region) &&
            px__sf_streq(s->json_key, src->json_key))
            return s;
    px__sfsrc_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    int bad = 0;
    s->id = px__sf_dup(src->id, &bad);
    s->region = px__sf_dup(src->region, &bad);
    s->json_key = px__sf_dup(src->json_key, &bad);
    if (bad) {
        free(s->id);
        free(s->region);
        free(s->json_key);
        free(s);
        return NULL;
    }
    s->sf = sf;
    s->ssm = src->ssm;
    s->with_decryption = src->with_decryption;
    uv_timer_init(sf->loop->uv, &s->timer);
    s->timer.data = s;
    s->next = sf->list;
    sf->list = s;
    return s;
}

/* The loader's question (addon_awssecret_lookup_cb). */
static int on_sf_lookup(void *arg, const addon_awssecret_src_t *src, unsigned refresh,
                        const char **value, size_t *vlen, char *why, size_t whylen)
{
    px_secretfetch_t *sf = arg;
    px__sfsrc_t *s = sf->closed ? NULL : px__sf_find(sf, src);
    if (s == NULL) {
        snprintf(why, whylen, sf->closed ? "airlock is shutting down" : "out of memory");
        return PX_ENOMEM;
    }
    s->seen = sf->load_seq;
    s->refresh = refresh;
    if (s->result_gen != 0 && s->result_gen >= sf->need_gen) {
        if (s->failed) {
            snprintf(why, whylen, "%s", s->why);
            return PX_EIO;
        }
        *value = s->value;
        *vlen = s->vlen;
        return 0;
    }
    sf->nwanted++;
    *value = PX__SF_STANDIN;
    *vlen = strlen(PX__SF_STANDIN);
    return 0;
}

px_secretfetch_t *px_secretfetch_new(px_loop_t *loop, void (*on_changed)(void *arg), void *arg)
{
    px_secretfetch_t *sf = calloc(1, sizeof(*sf));
    if (sf == NULL)
        return NULL;
    sf->loop = loop;
    sf->gen = sf->need_gen = 1; /* result_gen 0: never fetched */
    sf->on_changed = on_changed;
    sf->arg = arg;
    addon_awssecret_set_lookup(on_sf_lookup, sf);
    return sf;
}

void px_secretfetch_set_upmgr(px_secretfetch_t *sf, px_upmgr_t *up)
{
    sf->up = up;
}

int px_secretfetch_wanted(const px_secretfetch_t *sf)
{
    return sf->nwanted > 0;
}

/* One load: 0 and *out, 1 when values must be fetched first (nothing kept), or a failure. */
static int px__sf_load_once(px_secretfetch_t *sf, const px_config_t *cfg, int startup,
                            px_snapshot_t **out)
{
    sf->load_seq++;
    sf->nwanted = 0;
    *out = NULL;
    int rc = px_snapshot_load(cfg, startup, out);
    if (rc == 0 && sf->nwanted > 0) {
        px_snapshot_unref(*out);
        *out = NULL;
        return 1;
    }
    return rc;
}

/* Starts the fetch of every source the last load used a stand-in for. */
static void px__sf_round(px_secretfetch_t *sf)
{
    sf->rounds++;
    /* all are marked before any starts: a fetch that fails at once must not end the round */
    for (px__sfsrc_t *s = sf->list; s != NULL; s = s->next) {
        if (s->seen != sf->load_seq || (s->result_gen != 0 && s->result_gen >= sf->need_gen))
            continue;
        s->in_round = 1;
        s->tries = 0;
    }
    for (px__sfsrc_t *s = sf->list; s != NULL; s = s->next)
        if (s->in_round && s->up == NULL)
            px__sf_fetch(s); /* one under way ends first, then fetches again if too old */
    px__sf_round_check(sf);
}

static void px__sf_begin(px_secretfetch_t *sf, int fresh)
{
    if (fresh)
        sf->need_gen = ++sf->gen;
    sf->rounds = 0;
}

int px_secretfetch_load_sync(px_secretfetch_t *sf, const px_config_t *cfg, px_snapshot_t **out)
{
    px__sf_begin(sf, 0); /* the first load (px_engine) made the generation */
    int rc = px__sf_load_once(sf, cfg, 1, out);
    while (rc == 1 && sf->rounds < PX__SF_ROUNDS) {
        sf->sync_done = 0;
        sf->busy = 2;
        px__sf_round(sf);
        while (!sf->sync_done)
            uv_run(sf->loop->uv, UV_RUN_ONCE);
        sf->busy = 0;
        rc = px__sf_load_once(sf, cfg, 1, out);
    }
    if (rc == 1) {
        px_diag(PX_DIAG_ERROR, "%s: the values to fetch from AWS kept changing",
                cfg->replacements_path);
        rc = PX_ESTATE;
    }
    if (rc == 0)
        px_secretfetch_commit(sf);
    return rc;
}

static void on_sf_round_end(px_defer_t *d)
{
    px_secretfetch_t *sf = px_container_of(d, px_secretfetch_t, round_end);
    if (sf->busy == 2) {
        sf->sync_done = 1;
        return;
    }
    if (!sf->busy)
        return;
    px_snapshot_t *n = NULL;
    int rc = sf->closed ? PX_ESTATE : px__sf_load_once(sf, sf->cfg, 0, &n);
    if (rc == 1 && sf->rounds < PX__SF_ROUNDS) {
        px__sf_round(sf);
        return;
    }
    if (rc == 1)
        px_diag(PX_DIAG_ERROR,
                "%s: the values to fetch from AWS kept changing (reload failed; "
                "keeping the previous configuration)",
                sf->cfg->replacements_path);
    sf->busy = 0;
    sf->done(sf->done_arg, rc == 0 ? n : NULL);
    if (sf->again && !sf->closed) {
        sf->again = 0;
        px_secretfetch_load(sf, sf->cfg, sf->again_fresh, sf->done, sf->done_arg);
    }
}

void px_secretfetch_load(px_secretfetch_t *sf, const px_config_t *cfg, int fresh,
                         px_secretfetch_load_cb done, void *arg)
{
    if (sf->busy) {
        sf->again = 1;
        sf->again_fresh |= fresh;
        return;
    }
    sf->again_fresh = 0;
    sf->cfg = cfg;
    sf->done = done;
    sf->done_arg = arg;
    px__sf_begin(sf, fresh);
    px_snapshot_t *n = NULL;
    int rc = px__sf_load_once(sf, cfg, 0, &n);
    if (rc == 1 && !sf->closed) {
        sf->busy = 1;
        px__sf_round(sf);
        return;
    }
    done(arg, rc == 0 ? n : NULL);
}

static void px__sf_drop(px__sfsrc_t *s)
{
    px__sf_abort(s);
    uv_close((uv_handle_t *)&s->timer, on_sf_closed);
}

void px_secretfetch_commit(px_secretfetch_t *sf)
{
    for (px__sfsrc_t **p = &sf->list; *p != NULL;) {
        px__sfsrc_t *s = *p;
        if (s->seen == sf->load_seq || s->in_round) {
            p = &s->next;
            continue;
        }
        *p = s->next;
        px__sf_drop(s);
    }
}

void px_secretfetch_close(px_secretfetch_t *sf)
{
    if (sf == NULL || sf->closed)
        return;
    sf->closed = 1;
    addon_awssecret_set_lookup(NULL, NULL);
    px_defer_cancel(sf->loop, &sf->changed);
    px_defer_cancel(sf->loop, &sf->round_end);
    while (sf->list != NULL) {
        px__sfsrc_t *s = sf->list;
        sf->list = s->next;
        px__sf_drop(s);
    }
}

void px_secretfetch_free(px_secretfetch_t *sf)
{
    if (sf == NULL)
        return;
    px_secretfetch_close(sf);
    free(sf);
}
