/* The allowlist as it is built by every reader: the policy object and its entry lists, host
 * patterns (case, trailing and leading dots, brackets, IDN), sources and removed entries. */
#include <arpa/inet.h>
#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_glob.h"
#include "addons/addon_policy_int.h"
#include "base/px_err.h"
#include "base/px_grow.h"

#define ADDON__POLICY_LABEL_MAX 255 /* bytes of one label as written (UTF-8) */

addon_policy_t *addon__policy_new(const char *name, addon_policy_format_t fmt)
{
    addon_policy_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->name = strdup(name != NULL ? name : "<allowlist>");
    if (p->name == NULL) {
        free(p);
        return NULL;
    }
    p->format = fmt == ADDON_POLICY_FORMAT_AUTO ? ADDON_POLICY_FORMAT_NATIVE : fmt;
    atomic_init(&p->refs, 1);
    return p;
}

void addon__policy_entry_free(addon__policy_entry_t *e)
{
    free((char *)e->host.base);
    free((char *)e->path.base);
    for (size_t i = 0; i < e->nmethods; i++)
        free((char *)e->methods[i].base);
    free(e->methods);
    free(e->ports);
    free(e->src);
    if (e->graphql != NULL) {
        const addon_policy_graphql_t *g = e->graphql;
        const addon_str_t *lists[] = {g->queries, g->mutations, g->subscriptions};
        size_t counts[] = {g->nqueries, g->nmutations, g->nsubscriptions};
        for (size_t k = 0; k < 3; k++) {
            for (size_t i = 0; i < counts[k]; i++)
                free((char *)lists[k][i].base);
            free((addon_str_t *)lists[k]);
        }
        free(e->graphql);
    }
}

static void policy_list_free(addon__policy_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        addon__policy_entry_free(&l->v[i]);
    free(l->v);
}

void addon__policy_free(addon_policy_t *p)
{
    if (p == NULL)
        return;
    policy_list_free(&p->domains);
    policy_list_free(&p->urls);
    policy_list_free(&p->blocks);
    for (size_t i = 0; i < p->nremoved; i++) {
        free(p->removed[i].text);
        free(p->removed[i].src);
    }
    free(p->removed);
    addon__policy_budgets_free(p);
    addon__policy_fetch_pass_free(p);
    free(p->name);
    free(p);
}

addon__policy_entry_t *addon__policy_push(addon_policy_t *p, addon_policy_kind_t kind, int *rc)
{
    addon__policy_list_t *l = kind == ADDON_POLICY_DOMAINS        ? &p->domains
                              : kind == ADDON_POLICY_URL_PREFIXES ? &p->urls
                                                                  : &p->blocks;
    *rc = px_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v), 8, ADDON_POLICY_ENTRIES_MAX);
    if (*rc != 0)
        return NULL;
    addon__policy_entry_t *e = &l->v[l->n++];
    memset(e, 0, sizeof(*e));
    *rc = 0;
    return e;
}

int addon__policy_set_src(addon__policy_entry_t *e, const char *src)
{
    free(e->src);
    e->src = strdup(src);
    return e->src == NULL ? PX_ENOMEM : 0;
}

int addon__policy_note_removed(addon_policy_t *p, const char *text, size_t len, const char *src,
                               size_t block)
{
    int rc =
        px_grow(&p->removed, &p->removed_cap, p->nremoved + 1, sizeof(*p->removed), 8, SIZE_MAX);
    if (rc != 0)
        return rc;
    addon__policy_removed_t *r = &p->removed[p->nremoved];
    r->text = strndup(text, len);
    r->src = strdup(src != NULL ? src : "");
    r->block = block;
    if (r->text == NULL || r->src == NULL) {
        free(r->text);
        free(r->src);
        return PX_ENOMEM;
    }
    p->nremoved++;
    return 0;
}

/* Appends s[0..len) lowercased to the buffer *d (size *cap, length *n), growing it. */
static int policy_append(char **d, size_t *n, size_t *cap, const char *s, size_t len)
{
    size_t need = *n + len + 1;
    /* first twice the first piece, then doubling */
    int rc = px_grow(d, cap, need, 1, need * 2, SIZE_MAX);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        (*d)[(*n)++] = c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
    }
    (*d)[*n] = '\0';
    return 0;
}

/* One label, lowercased; a label holding non-ASCII bytes becomes its A-label (IDNA2008 with the
 * TR46 non-transitional mapping, as browsers look names up). The result may hold only letters,
 * digits, '-' and '_': TR46 maps fullwidth ':', '/', '*' or '.' to ASCII that would change what
 * the pattern means (and libidn2 2.3's STD3 flag drops them silently instead of failing). */
static int policy_label(const char *s, size_t len, int glob, char **d, size_t *n, size_t *cap,
                        const char **why)
{
    int ascii = 1;
    for (size_t i = 0; i < len; i++)
        ascii &= (unsigned char)s[i] < 0x80;
    if (ascii)
        return policy_append(d, n, cap, s, len);
    if (glob && addon_glob_is_glob(s, len)) {
        *why = "a label with '*' or '?' must be ASCII (write the name's other labels in any "
               "script, or this one in punycode)";
        return PX_ECONFIG;
    }
    if (len > ADDON__POLICY_LABEL_MAX) {
        *why = "not a valid internationalized name (label too long)";
        return PX_ECONFIG;
    }
    char label[ADDON__POLICY_LABEL_MAX + 1];
    memcpy(label, s, len);
    label[len] = '\0';
    char *a = NULL;
    int rc = idn2_to_ascii_8z(label, &a, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    if (rc != IDN2_OK) {
        *why = rc == IDN2_MALLOC ? "out of memory" : "not a valid internationalized name";
        return rc == IDN2_MALLOC ? PX_ENOMEM : PX_ECONFIG;
    }
    for (const char *c = a; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_')) {
            idn2_free(a);
            *why = "not a valid internationalized name (a character maps to punctuation)";
            return PX_ECONFIG;
        }
    }
    rc = policy_append(d, n, cap, a, strlen(a));
    idn2_free(a);
    return rc;
}

int addon__policy_host(const char *s, size_t len, addon__policy_entry_t *e, const char **why)
{
    size_t colons = 0;
    size_t last_colon = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f) {
            *why = "host pattern contains a space or control character";
            return PX_ECONFIG;
        }
        if (c == '/') {
            *why = "host pattern contains '/' (put the path in 'path')";
            return PX_ECONFIG;
        }
        if (c == ':') {
            colons++;
            last_colon = i;
        }
    }
    /* "example.com:8443" or "[::1]:8443": ports belong in 'ports', not in the pattern. */
    size_t digits_from = 0;
    if (colons == 1)
        digits_from = last_colon + 1;
    else if (colons > 1 && s[0] == '[' && last_colon > 0 && s[last_colon - 1] == ']')
        digits_from = last_colon + 1;
    int port_suffix = digits_from > 0 && digits_from < len;
    for (size_t i = digits_from; port_suffix && i < len; i++)
        port_suffix = s[i] >= '0' && s[i] <= '9';
    if (port_suffix) {
        *why = "host pattern contains a port (list it under 'ports')";
        return PX_ECONFIG;
    }
    size_t start = 0;
    size_t end = len;
    int glob = addon_glob_is_glob(s, len);
    int sub = 0;
    int ip6 = 0;
    if (!glob) {
        /* A glob keeps its dots and brackets: "[" starts a class there. */
        if (end > start && s[end - 1] == '.')
            end--;
        if (end - start >= 2 && s[start] == '.') {
            start++;
            sub = 1;
        }
        if (end - start >= 2 && s[start] == '[' && s[end - 1] == ']') {
            start++;
            end--;
            ip6 = 1;
        }
    }
    if (end == start) {
        *why = "empty host pattern";
        return PX_ECONFIG;
    }
    /* "a..b", "a.." or "..a": an empty label matches no name, and cutting one more dot on a
     * second reading would change the pattern (--print-effective reads back as written). */
    if (!glob && !ip6 && colons == 0 &&
        (s[start] == '.' || s[end - 1] == '.' || memmem(s + start, end - start, "..", 2) != NULL)) {
        *why = "host pattern has an empty label (two dots in a row, or a dot at an end)";
        return PX_ECONFIG;
    }
    char *d = NULL;
    size_t n = 0;
    size_t cap = 0;
    int rc = 0;
    if (ip6 || colons > 0) {
        /* an IPv6 address: checked (a glob may hold part of one), no labels to convert */
        char a6[INET6_ADDRSTRLEN + 1];
        unsigned char bin[16];
        size_t alen = end - start;
        if (!glob && (alen >= sizeof(a6) || (memcpy(a6, s + start, alen), a6[alen] = '\0',
                                             inet_pton(AF_INET6, a6, bin) != 1))) {
            *why = "host pattern with ':' is not an IPv6 address";
            return PX_ECONFIG;
        }
        for (size_t i = start; glob && i < end; i++) {
            if ((unsigned char)s[i] >= 0x80) {
                *why = "host pattern with ':' is not an IPv6 address";
                return PX_ECONFIG;
            }
        }
        rc = policy_append(&d, &n, &cap, s + start, end - start);
    } else {
        size_t from = start;
        for (size_t i = start; i <= end && rc == 0; i++) {
            if (i < end && s[i] != '.')
                continue;
            rc = policy_label(s + from, i - from, glob, &d, &n, &cap, why);
            if (rc == 0 && i < end)
                rc = policy_append(&d, &n, &cap, ".", 1);
            from = i + 1;
        }
    }
    /* IDNA maps some code points to nothing (U+FEFF, soft hyphens): check the result again. */
    if (rc == 0 && (n == 0 || (!glob && !ip6 && colons == 0 &&
                               (d[0] == '.' || d[n - 1] == '.' || strstr(d, "..") != NULL)))) {
        *why = n == 0 ? "empty host pattern"
                      : "host pattern has an empty label (two dots in a row, or a dot at an end)";
        rc = PX_ECONFIG;
    }
    if (rc != 0) {
        free(d);
        if (rc == PX_ENOMEM)
            *why = "out of memory";
        return rc;
    }
    e->host.base = d;
    e->host.len = n;
    e->host_glob = addon_glob_is_glob(d, n);
    e->sub = sub;
    return 0;
}

const char *addon__policy_host_text(const addon__policy_entry_t *e, char *buf, size_t len)
{
    snprintf(buf, len, "%s%.*s", e->sub ? "." : "", (int)e->host.len, e->host.base);
    return buf;
}

int addon__policy_block_names(const addon__policy_entry_t *b, const addon__policy_entry_t *e)
{
    if (!b->host_glob)
        return b->sub == e->sub && b->host.len == e->host.len &&
               memcmp(b->host.base, e->host.base, e->host.len) == 0;
    if (!e->sub)
        return addon_glob_fnmatch(b->host.base, b->host.len, e->host.base, e->host.len, 1);
    char *t = malloc(e->host.len + 1);
    if (t == NULL)
        return 0;
    t[0] = '.';
    memcpy(t + 1, e->host.base, e->host.len);
    int m = addon_glob_fnmatch(b->host.base, b->host.len, t, e->host.len + 1, 1);
    free(t);
    return m;
}
