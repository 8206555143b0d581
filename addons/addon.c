#include "addons/addon.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "base/px_host.h"
#include "base/px_path.h"
#include "base/px_pct.h"

/* A bump allocator of chained blocks with a hard total cap. */
typedef struct addon__block {
    struct addon__block *next;
    size_t used;
    size_t cap;
    char data[];
} addon__block_t;

struct addon_arena {
    addon__block_t *head;
    size_t total;
};

#define ADDON__BLOCK_MIN 4096

void addon_req_reset(addon_req_t *req)
{
    if (req->arena != NULL) {
        addon__block_t *b = req->arena->head;
        while (b != NULL) {
            addon__block_t *next = b->next;
            explicit_bzero(b->data, b->used); /* real credentials may have lived here */
            free(b);
            b = next;
        }
        free(req->arena);
    }
    addon_log_cb cb = req->log_cb;
    void *data = req->log_data;
    memset(req, 0, offsetof(addon_req_t, headers));
    req->nheaders = 0;
    req->arena = NULL;
    req->annot[0] = '\0';
    req->annot_len = 0;
    req->log_cb = cb;
    req->log_data = data;
    req->config = NULL;
    req->url = NULL;
    req->credentials_done = 0;
    req->body_mode = ADDON_BODY_PASS;
    req->body_cap = 0;
    req->filter_cap = 0;
    req->state = NULL;
    req->state_owner = NULL;
}

addon_req_t *addon_req_new(void)
{
    addon_req_t *req = malloc(sizeof(*req));
    if (req == NULL)
        return NULL;
    req->arena = NULL;
    addon_req_reset(req);
    req->log_cb = NULL;
    req->log_data = NULL;
    return req;
}

char *addon_req_dup(addon_req_t *req, const char *s, size_t len)
{
    if (req->arena == NULL) {
        req->arena = calloc(1, sizeof(*req->arena));
        if (req->arena == NULL)
            return NULL;
    }
    addon_arena_t *a = req->arena;
    if (a->total + len + 1 > ADDON_ARENA_MAX)
        return NULL;
    addon__block_t *b = a->head;
    if (b == NULL || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > ADDON__BLOCK_MIN ? len + 1 : ADDON__BLOCK_MIN;
        b = malloc(sizeof(*b) + cap);
        if (b == NULL)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    char *p = b->data + b->used;
    if (len > 0)
        memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    a->total += len + 1;
    return p;
}

int addon_req_find(const addon_req_t *req, const char *name, size_t from)
{
    size_t nlen = strlen(name);
    for (size_t i = from; i < req->nheaders; i++) {
        const addon_header_t *h = &req->headers[i];
        if (!h->removed && h->name.len == nlen && strncasecmp(h->name.base, name, nlen) == 0)
            return (int)i;
    }
    return -1;
}

int addon_req_set_value(addon_req_t *req, size_t idx, const char *value, size_t len)
{
    char *copy = addon_req_dup(req, value, len);
    if (copy == NULL)
        return PX_ENOMEM;
    req->headers[idx].value.base = copy;
    req->headers[idx].value.len = len;
    return 0;
}

void addon_req_remove_header(addon_req_t *req, size_t idx)
{
    if (idx < req->nheaders)
        req->headers[idx].removed = 1;
}

int addon_req_add_header(addon_req_t *req, const char *name, size_t nlen, const char *value,
                         size_t vlen)
{
    size_t cap = sizeof(req->headers) / sizeof(req->headers[0]);
    if (req->nheaders >= cap)
        return PX_ETOOBIG;
    char *n = addon_req_dup(req, name, nlen);
    char *v = addon_req_dup(req, value, vlen);
    if (n == NULL || v == NULL)
        return PX_ENOMEM;
    addon_header_t *h = &req->headers[req->nheaders++];
    h->name.base = n;
    h->name.len = nlen;
    h->value.base = v;
    h->value.len = vlen;
    h->removed = 0;
    return 0;
}

void addon_req_annotate(addon_req_t *req, const char *fmt, ...)
{
    size_t room = sizeof(req->annot) - req->annot_len;
    if (room < 4)
        return;
    char *p = req->annot + req->annot_len;
    p[0] = ' ';
    p[1] = '[';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p + 2, room - 3, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t w = (size_t)n < room - 4 ? (size_t)n : room - 4;
    p[2 + w] = ']';
    p[3 + w] = '\0';
    req->annot_len += 3 + w;
}

static void addon__note(addon_req_t *req, const char *url, addon_note_kind_t kind,
                        const char *header, unsigned count, const char *fmt, va_list ap)
{
    if (req->log_cb == NULL)
        return;
    char tail[2048];
    int n = vsnprintf(tail, sizeof(tail), fmt, ap);
    if (n < 0)
        return;
    addon_note_t note = {.kind = kind, .method = req->method, .count = count};
    note.url = (addon_str_t){url != NULL ? url : "", url != NULL ? strlen(url) : 0};
    note.header = (addon_str_t){header != NULL ? header : "", header != NULL ? strlen(header) : 0};
    note.tail = (addon_str_t){tail, (size_t)n < sizeof(tail) ? (size_t)n : sizeof(tail) - 1};
    req->log_cb(req->log_data, &note);
}

void addon_req_note(addon_req_t *req, addon_note_kind_t kind, const char *header, unsigned count,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    addon__note(req, req->url, kind, header, count, fmt, ap);
    va_end(ap);
}

void addon_req_note_at(addon_req_t *req, const char *url, addon_note_kind_t kind,
                       const char *header, unsigned count, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    addon__note(req, url, kind, header, count, fmt, ap);
    va_end(ap);
}

/* The readings of the decoded path part d[0..dlen) into the view: d itself first (borrowed when
 * it is the raw path part, else copied), then each distinct reading, copied. */
static int addon__readings(addon_req_t *req, const char *d, size_t dlen, int borrowed)
{
    unsigned changes = px_path_changes(d, dlen);
    if (!borrowed && (d = addon_req_dup(req, d, dlen)) == NULL)
        return PX_ENOMEM;
    req->readings[0] = (addon_str_t){d, dlen};
    req->nreadings = 1;
    if (changes == 0)
        return 0;
    char *buf = malloc(dlen + 1);
    if (buf == NULL)
        return PX_ENOMEM;
    int rc = 0;
    for (unsigned how = 1; how <= PX_PATH_ALL && rc == 0; how++) {
        if (!px_path_worth(changes, how))
            continue;
        size_t n = px_path_reading(d, dlen, how, buf);
        size_t k = 0;
        while (k < req->nreadings &&
               !(req->readings[k].len == n && memcmp(req->readings[k].base, buf, n) == 0))
            k++;
        if (k < req->nreadings)
            continue; /* the same as one made already: each reading is listed once */
        const char *copy = addon_req_dup(req, buf, n);
        if (copy == NULL)
            rc = PX_ENOMEM;
        else
            req->readings[req->nreadings++] = (addon_str_t){copy, n};
    }
    free(buf);
    return rc;
}

int addon_req_view(addon_req_t *req)
{
    req->view = 0;
    req->nreadings = 0;
    char host[256];
    int hl = req->host_norm.base != NULL
                 ? 0 /* the caller's (the proxy's pre-check made it) */
                 : px_host_norm(host, sizeof(host), req->host.base, req->host.len);
    if (req->host_norm.base == NULL)
        req->host_norm = (addon_str_t){"", 0};
    if (hl > 0) {
        const char *h = addon_req_dup(req, host, (size_t)hl);
        if (h == NULL)
            return PX_ENOMEM;
        req->host_norm = (addon_str_t){h, (size_t)hl};
    }
    const char *raw = req->path.base;
    const char *q = memchr(raw, '?', req->path.len);
    size_t rlen = q != NULL ? (size_t)(q - raw) : req->path.len;
    int rc = 0;
    if (rlen > PX_PATH_ANY_MAX) {
        rc = 0; /* unreadable: nreadings 0 (the features apply: fail-secure) */
    } else if (memchr(raw, '%', rlen) == NULL) {
        rc = addon__readings(req, raw, rlen, 1); /* nothing to decode: the raw path part */
    } else {
        char *dec = malloc(rlen + 1);
        if (dec == NULL)
            return PX_ENOMEM;
        size_t dlen = px_pct_unquote(raw, rlen, dec);
        rc = addon__readings(req, dec, dlen, 0);
        free(dec);
    }
    if (rc != 0) {
        req->nreadings = 0;
        return rc;
    }
    req->view = 1;
    return 0;
}

int addon_req_path_any(const addon_req_t *req, int (*pred)(const char *path, size_t len, void *ctx),
                       void *ctx)
{
    if (!req->view)
        return px_path_any(req->path.base, req->path.len, pred, ctx);
    if (req->nreadings == 0)
        return 1; /* over-long: fail-secure, as px_path_any() */
    for (size_t i = 0; i < req->nreadings; i++) {
        int r = pred(req->readings[i].base, req->readings[i].len, ctx);
        if (r != 0)
            return r;
    }
    return 0;
}

int addon_req_path_under(const addon_req_t *req, const char *base)
{
    return addon_req_path_any(req, px_path_is_under, (void *)base);
}

int addon_req_host_is(const addon_req_t *req, const char *name)
{
    size_t n = strlen(name);
    if (req->view)
        return req->host_norm.len == n && memcmp(req->host_norm.base, name, n) == 0;
    char host[256];
    int hl = px_host_norm(host, sizeof(host), req->host.base, req->host.len);
    return hl >= 0 && (size_t)hl == n && memcmp(host, name, n) == 0;
}
