/* The `budgets:` list of airlock's own allowlist format (docs/budgets.md):
 *
 *   budgets:
 *     - host: all                 # every host: the whole conversation
 *       requests: 1000
 *       sent: 10MB                # request bodies; KB = 1000, KiB = 1024
 *       received: 1GiB            # response bodies
 *       rate: 60/min              # a token bucket: 60 at once, one back every second
 *     - host: "*.paste.example"   # the hosts a pattern matches (the entries' syntax)
 *       sent: 100KB
 *
 * Each item sets one to four limits; each limit becomes one addon_budget_t whose identity is
 * its kind and host pattern (two items may not set the same one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_budget.h"
#include "addons/addon_out.h"
#include "addons/addon_policy_int.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

static const char *const budget_keys[] = {"host", "requests", "sent", "received", "rate", NULL};

static const char *const budget_kind_names[] = {
    [ADDON_BUDGET_REQUESTS] = "requests",
    [ADDON_BUDGET_SENT] = "sent",
    [ADDON_BUDGET_RECEIVED] = "received",
    [ADDON_BUDGET_RATE] = "rate",
};

#define BUDGET_COUNT_MAX 1000000000000000000ULL /* 10^18: far from overflow when added to */

const char *addon_budget_kind_name(addon_budget_kind_t kind)
{
    if ((size_t)kind < sizeof(budget_kind_names) / sizeof(budget_kind_names[0]))
        return budget_kind_names[kind];
    return "unknown";
}

const addon_budget_t *addon_policy_budgets(const addon_policy_t *p, size_t *n)
{
    *n = p != NULL ? p->nbudgets : 0;
    return p != NULL ? p->budgets : NULL;
}

int addon_budget_matches(const addon_budget_t *b, addon_str_t host)
{
    return b->pattern == NULL || addon__policy_host_matches(b->pattern, host);
}

/* ---- sizes and rates ------------------------------------------------------------------------- */

static int budget_ieq(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* Reads the decimal number at s[0..len) into *v, its end in *end. */
static int budget_number(const char *s, size_t len, uint64_t *v, size_t *end)
{
    size_t i = 0;
    uint64_t n = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (n > BUDGET_COUNT_MAX / 10)
            return PX_ECONFIG;
        n = n * 10 + (uint64_t)(s[i] - '0');
        i++;
    }
    if (i == 0)
        return PX_ECONFIG;
    *v = n;
    *end = i;
    return 0;
}

int addon_budget_parse_size(const char *s, size_t len, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"b", 1},
        {"kb", 1000ULL},
        {"mb", 1000ULL * 1000},
        {"gb", 1000ULL * 1000 * 1000},
        {"tb", 1000ULL * 1000 * 1000 * 1000},
        {"kib", 1ULL << 10},
        {"mib", 1ULL << 20},
        {"gib", 1ULL << 30},
        {"tib", 1ULL << 40},
    };
    uint64_t n;
    size_t i;
    if (budget_number(s, len, &n, &i) != 0)
        return PX_ECONFIG;
    while (i < len && s[i] == ' ')
        i++;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        if (!budget_ieq(s + i, len - i, units[k].unit))
            continue;
        if (n > BUDGET_COUNT_MAX / units[k].mult)
            return PX_ECONFIG;
        *out = n * units[k].mult;
        return 0;
    }
    return PX_ECONFIG;
}

int addon_budget_parse_rate(const char *s, size_t len, uint64_t *n, uint64_t *per_ms)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {
        {"s", 1000},       {"sec", 1000},  {"second", 1000},  {"m", 60000},    {"min", 60000},
        {"minute", 60000}, {"h", 3600000}, {"hour", 3600000}, {"d", 86400000}, {"day", 86400000},
    };
    size_t i;
    if (budget_number(s, len, n, &i) != 0 || *n == 0 || *n > 1000000000)
        return PX_ECONFIG;
    while (i < len && s[i] == ' ')
        i++;
    if (i >= len || s[i] != '/')
        return PX_ECONFIG;
    i++;
    while (i < len && s[i] == ' ')
        i++;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        if (budget_ieq(s + i, len - i, units[k].unit)) {
            *per_ms = units[k].ms;
            return 0;
        }
    }
    return PX_ECONFIG;
}

size_t addon_budget_limit_text(const addon_budget_t *b, char *buf, size_t len)
{
    if (b->kind != ADDON_BUDGET_RATE)
        return (size_t)snprintf(buf, len, "%llu", (unsigned long long)b->limit);
    const char *per = b->per_ms == 1000      ? "s"
                      : b->per_ms == 60000   ? "min"
                      : b->per_ms == 3600000 ? "hour"
                                             : "day";
    return (size_t)snprintf(buf, len, "%llu/%s", (unsigned long long)b->limit, per);
}

void addon__policy_budgets_text(const addon_policy_t *p, addon_out_t *o, int yaml)
{
    if (p == NULL || p->nbudgets == 0)
        return;
    if (yaml)
        addon_out_fmt(o, "budgets:\n");
    for (size_t i = 0; i < p->nbudgets; i++) {
        const addon_budget_t *b = &p->budgets[i];
        char lim[48];
        addon_budget_limit_text(b, lim, sizeof(lim));
        if (!yaml) {
            /* addon_out_fmt writes up to 255 bytes a call: the host (up to 255) goes apart */
            addon_out_fmt(o, "budgets[%zu] %s for ", i, addon_budget_kind_name(b->kind));
            addon_out_put(o, b->host, strlen(b->host));
            addon_out_fmt(o, ": %s (", lim);
            addon_out_esc(o, (addon_str_t){b->src, strlen(b->src)});
            addon_out_fmt(o, ")\n");
            continue;
        }
        if (b->pattern == NULL) {
            addon_out_fmt(o, "  - host: all  # ");
        } else {
            /* a double-quoted YAML scalar: a host pattern holds no control character */
            addon_out_fmt(o, "  - host: \"");
            for (const char *c = b->host; *c != '\0'; c++)
                addon_out_fmt(o, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            addon_out_fmt(o, "\"  # ");
        }
        addon_out_esc(o, (addon_str_t){b->src, strlen(b->src)});
        addon_out_fmt(o, "\n    %s: %s\n", addon_budget_kind_name(b->kind), lim);
    }
}

/* ---- the budgets of a policy, whatever the format -------------------------------------------- */

static int budget_nomem(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return PX_ENOMEM;
}

static void budget_free_one(addon_budget_t *b)
{
    if (b->pattern != NULL) {
        addon__policy_entry_free(b->pattern);
        free(b->pattern);
    }
    free(b->host);
    free(b->key);
    free(b->src);
}

void addon__policy_budgets_free(addon_policy_t *p)
{
    for (size_t i = 0; i < p->nbudgets; i++)
        budget_free_one(&p->budgets[i]);
    free(p->budgets);
    p->budgets = NULL;
    p->nbudgets = 0;
}

/* The limit val[0..len) of kind k into *v (and *per for a rate); 0, or PX_ECONFIG with *msg. */
static int budget_value(addon_budget_kind_t k, const char *s, size_t len, uint64_t *v,
                        uint64_t *per, const char **msg)
{
    size_t end;
    switch (k) {
    case ADDON_BUDGET_REQUESTS:
        *msg = "expected a whole number of requests (0 or more)";
        return budget_number(s, len, v, &end) != 0 || end != len ? PX_ECONFIG : 0;
    case ADDON_BUDGET_RATE:
        *msg = "expected COUNT/PERIOD such as \"60/min\" (count 1 to 10^9; period s, min, hour "
               "or day)";
        return addon_budget_parse_rate(s, len, v, per);
    default:
        *msg = "expected a size in bytes such as 1048576, \"512KB\" or \"10MiB\" (units B, KB, "
               "MB, GB, TB = powers of 1000; KiB, MiB, GiB, TiB = powers of 1024)";
        return addon_budget_parse_size(s, len, v);
    }
}

/* b's host from host[0..len): NULL pattern for "all", else a host pattern. */
static int budget_host(addon_budget_t *b, const char *host, size_t len, const char **why)
{
    *why = "out of memory";
    if (len == 3 && memcmp(host, "all", 3) == 0) {
        b->host = strdup("all");
        return b->host == NULL ? PX_ENOMEM : 0;
    }
    b->pattern = calloc(1, sizeof(*b->pattern));
    if (b->pattern == NULL)
        return PX_ENOMEM;
    int rc = addon__policy_host(host, len, b->pattern, why);
    if (rc != 0)
        return rc;
    size_t tlen = b->pattern->host.len + 2;
    b->host = malloc(tlen);
    if (b->host == NULL)
        return PX_ENOMEM;
    addon__policy_host_text(b->pattern, b->host, tlen);
    return 0;
}

int addon__policy_budget_add(addon_policy_t *p, int kind, const char *host, size_t hlen,
                             const char *val, size_t vlen, const char *src, char *msg,
                             size_t msglen, int *at)
{
    addon_budget_kind_t k = (addon_budget_kind_t)kind;
    const char *why = NULL;
    uint64_t v = 0, per = 0;
    *at = ADDON__BUDGET_AT_VALUE;
    if (budget_value(k, val, vlen, &v, &per, &why) != 0) {
        snprintf(msg, msglen, "%s", why);
        return PX_ECONFIG;
    }
    *at = ADDON__BUDGET_AT_ITEM;
    if (p->budgets == NULL)
        p->budgets = calloc(ADDON_BUDGET_MATCH_MAX, sizeof(*p->budgets));
    if (p->budgets == NULL) {
        snprintf(msg, msglen, "out of memory");
        return PX_ENOMEM;
    }
    if (p->nbudgets == ADDON_BUDGET_MATCH_MAX) {
        snprintf(msg, msglen, "more than %d limits", ADDON_BUDGET_MATCH_MAX);
        return PX_ECONFIG;
    }
    addon_budget_t *b = &p->budgets[p->nbudgets];
    memset(b, 0, sizeof(*b));
    p->nbudgets++; /* counted now so that a failure below frees what was set */
    b->kind = k;
    b->limit = v;
    b->per_ms = per;
    int rc = budget_host(b, host, hlen, &why);
    if (rc != 0) {
        *at = rc == PX_ENOMEM ? ADDON__BUDGET_AT_ITEM : ADDON__BUDGET_AT_HOST;
        snprintf(msg, msglen, "%s", why);
        return rc;
    }
    char buf[ADDON__POLICY_SRC_MAX];
    snprintf(buf, sizeof(buf), "%s %s", addon_budget_kind_name(k), b->host);
    b->key = strdup(buf);
    b->src = strdup(src);
    if (b->key == NULL || b->src == NULL) {
        snprintf(msg, msglen, "out of memory");
        return PX_ENOMEM;
    }
    for (size_t i = 0; i + 1 < p->nbudgets; i++) {
        if (strcmp(p->budgets[i].key, b->key) == 0) {
            snprintf(msg, msglen,
                     "a '%s' budget for %s is already set at %s (one per host pattern and kind)",
                     addon_budget_kind_name(k), b->host, p->budgets[i].src);
            return PX_ECONFIG;
        }
    }
    return 0;
}

/* ---- the YAML -------------------------------------------------------------------------------- */

/* Adds the limit of kind k of item n (index idx, host h) to p, unless the item does not set it;
 * *added counts it. */
static int budget_yaml_limit(addon_policy_t *p, const addon_yaml_node_t *n, size_t idx,
                             const addon_yaml_node_t *h, addon_budget_kind_t k, int *added,
                             char *err, size_t errlen)
{
    const addon_yaml_node_t *val = addon_yaml_get(n, addon_budget_kind_name(k));
    if (val == NULL || addon_yaml_type(val) == ADDON_YAML_NULL)
        return 0;
    char sub[ADDON__POLICY_WHAT_MAX + 16];
    snprintf(sub, sizeof(sub), "budgets[%zu].%s", idx, addon_budget_kind_name(k));
    if (addon_yaml_type(val) != ADDON_YAML_INT && addon_yaml_type(val) != ADDON_YAML_STRING)
        return addon_yaml_errorf(val, err, errlen, "%s: expected %s, got %s", sub,
                                 k == ADDON_BUDGET_RATE ? "a rate such as \"60/min\"" : "a number",
                                 addon_yaml_type_name(addon_yaml_type(val)));
    size_t hlen, vlen;
    const char *host = addon_yaml_text(h, &hlen);
    const char *v = addon_yaml_text(val, &vlen);
    char src[ADDON__POLICY_SRC_MAX], msg[ADDON__POLICY_SRC_MAX + 128];
    snprintf(src, sizeof(src), "%s:%u", p->name, addon_yaml_line(n));
    int at;
    int rc = addon__policy_budget_add(p, k, host, hlen, v, vlen, src, msg, sizeof(msg), &at);
    if (rc == PX_ENOMEM)
        return budget_nomem(err, errlen);
    if (rc != 0 && at == ADDON__BUDGET_AT_HOST)
        return addon_yaml_errorf(h, err, errlen, "budgets[%zu].host: %s", idx, msg);
    if (rc != 0)
        return addon_yaml_errorf(at == ADDON__BUDGET_AT_VALUE ? val : n, err, errlen, "%s: %s", sub,
                                 msg);
    (*added)++;
    return 0;
}

static int budget_item(addon_policy_t *p, const addon_yaml_node_t *n, size_t idx, char *err,
                       size_t errlen)
{
    char what[ADDON__POLICY_WHAT_MAX];
    snprintf(what, sizeof(what), "budgets[%zu]", idx);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc == 0)
        rc = addon_yaml_check_keys(n, budget_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *h = addon_yaml_get(n, "host");
    if (h == NULL)
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: missing required key 'host' (a host pattern, or all)", what);
    char sub[ADDON__POLICY_WHAT_MAX + 16];
    snprintf(sub, sizeof(sub), "%s.host", what);
    const char *s;
    size_t len;
    rc = addon_yaml_get_string(h, sub, &s, &len, err, errlen);
    int added = 0;
    for (int k = ADDON_BUDGET_REQUESTS; rc == 0 && k <= ADDON_BUDGET_RATE; k++)
        rc = budget_yaml_limit(p, n, idx, h, (addon_budget_kind_t)k, &added, err, errlen);
    if (rc == 0 && added == 0)
        return addon_yaml_errorf(
            n, err, errlen, "%s: sets no limit (give requests, sent, received and/or rate)", what);
    return rc;
}

int addon__policy_budgets_yaml(addon_policy_t *p, const addon_yaml_node_t *n, char *err,
                               size_t errlen)
{
    if (addon_yaml_type(n) == ADDON_YAML_NULL)
        return 0;
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "budgets", err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count > ADDON_BUDGETS_MAX)
        return addon_yaml_errorf(n, err, errlen, "budgets: more than %d items", ADDON_BUDGETS_MAX);
    for (size_t i = 0; rc == 0 && i < count; i++)
        rc = budget_item(p, addon_yaml_item(n, i), i, err, errlen);
    return rc;
}
