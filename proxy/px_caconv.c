/* The per-conversation CA: the allowlist's host patterns become name constraints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addons/addon_policy_hosts.h"
#include "base/px_err.h"
#include "proxy/px_caconv.h"
#include "proxy/px_log.h"

typedef struct caconv_walk {
    ca_constraints_t *c;
    char *err;
    size_t errlen;
} caconv_walk_t;

static int on_policy_host(void *arg, const char *pattern, size_t len, const char *where)
{
    caconv_walk_t *w = arg;
    char why[CA_ERR_LEN + 128];
    int rc = ca_constraints_add_host(w->c, pattern, len, why, sizeof(why));
    if (rc < 0)
        snprintf(w->err, w->errlen, "%s: %s", where, why);
    return rc;
}

int px_caconv_constraints(const addon_policy_t *p, ca_constraints_t *c, char *err, size_t errlen)
{
    caconv_walk_t w = {c, err, errlen};
    snprintf(err, errlen, "%s", "");
    return addon_policy_each_host(p, on_policy_host, &w);
}

int px_caconv_create_from(const char *confdir, const addon_policy_t *p, const char *path, int days,
                          const char *proxy_ip, char **desc, char *err, size_t errlen)
{
    char why[CA_ERR_LEN + 128];
    int rc;

    if (desc != NULL)
        *desc = NULL;
    ca_constraints_t *c = ca_constraints_new();
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    rc = px_caconv_constraints(p, c, err, errlen); /* err names the entry and its line */
    if (rc < 0)
        goto done;
    if (ca_constraints_count(c) == 0) {
        snprintf(err, errlen, "%s allows no host: a conversation CA would have nothing to sign for",
                 path);
        rc = PX_ECONFIG;
        goto done;
    }
    if (proxy_ip != NULL && proxy_ip[0] != '\0') {
        rc = ca_constraints_add_host(c, proxy_ip, strlen(proxy_ip), why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "proxy IP: %s", why);
            goto done;
        }
    }
    rc = ca_init_constrained(confdir, c, days, err, errlen);
    if (rc == 0 && desc != NULL) {
        size_t n = ca_constraints_describe(c, NULL, 0) + 1;
        *desc = malloc(n);
        if (*desc != NULL)
            ca_constraints_describe(c, *desc, n);
    }
done:
    ca_constraints_free(c);
    return rc;
}

int px_caconv_create(const char *confdir, const char *path, addon_policy_format_t fmt, int days,
                     const char *proxy_ip, char **desc, char *err, size_t errlen)
{
    addon_policy_t *p = NULL;
    char why[1024];

    if (desc != NULL)
        *desc = NULL;
    int rc = addon_policy_load_file_as(path, fmt, &p, why, sizeof(why));
    if (rc == PX_ENOENT)
        snprintf(err, errlen, "%s: no such file (the allowlist is required)", path);
    else if (rc < 0)
        snprintf(err, errlen, "%s", why);
    if (rc < 0)
        return rc;
    rc = px_caconv_create_from(confdir, p, path, days, proxy_ip, desc, err, errlen);
    addon_policy_unref(p);
    return rc;
}

/* 1 when confdir holds a CA (this conversation's, from an earlier start: ca_load checks it),
 * 0 when not, negative with err filled when confdir cannot be named. */
static int px__caconv_held(const char *confdir, char *err, size_t errlen)
{
    char file[CA_PATH_MAX];
    int n = snprintf(file, sizeof(file), "%s/%s", confdir, CA_FILE_KEY_CERT);
    if (n < 0 || (size_t)n >= sizeof(file)) {
        snprintf(err, errlen, "confdir path too long");
        return PX_ECONFIG;
    }
    return access(file, F_OK) == 0;
}

int px_caconv_ensure(const char *confdir, const char *path, addon_policy_format_t fmt, int days,
                     const char *proxy_ip, int *created, char *err, size_t errlen)
{
    *created = 0;
    int rc = px__caconv_held(confdir, err, errlen);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = px_caconv_create(confdir, path, fmt, days, proxy_ip, NULL, err, errlen);
    *created = rc == 0;
    return rc;
}

int px_caconv_sandbox(const px_caconv_sb_t *a, ca_t **out, int *created, char **desc, char *err,
                      size_t errlen)
{
    *out = NULL;
    *created = 0;
    *desc = NULL;
    int rc = px__caconv_held(a->privdir, err, errlen);
    if (rc == 0) {
        rc = px_caconv_create_from(a->privdir, a->policy, a->path, a->days, a->proxy_ip, desc, err,
                                   errlen);
        *created = rc == 0;
    }
    if (rc < 0)
        return rc;
    rc = ca_load(out, a->privdir, 0, PX_CACONV_SB_CACHE, err, errlen);
    if (rc == 0 && ca_get_constraints(*out) == NULL) {
        snprintf(err, errlen, "%s/%s " PX_CACONV_UNCONSTRAINED " (remove it)", a->privdir,
                 CA_FILE_KEY_CERT);
        rc = PX_ECONFIG;
    }
    if (rc == 0)
        rc = ca_export_cert(*out, a->privdir, a->pubdir, err, errlen);
    if (rc < 0) {
        ca_free(*out);
        *out = NULL;
        free(*desc);
        *desc = NULL;
        if (*created) /* nothing half-made stays behind */
            ca_remove_confdir(a->privdir);
        *created = 0;
    }
    return rc;
}

void px_caconv_log_refused(px_log_t *log, const addon_policy_t *policy, const char *host)
{
    addon_str_t h = {host, strlen(host)};
    audit_event_t ev = {.kind = AUDIT_EV_TLS_REJECTED, .verdict = AUDIT_EV_REJECTED};
    ev.host = audit_s(host);
    if (addon_policy_has_host(policy, h, 443, 1, NULL))
        ev.tail = audit_s("no certificate: " PX_CACONV_WHY);
    else
        ev.tail = audit_s("no certificate: not in the network allowlist, and outside the "
                          "conversation CA's name constraints");
    px_log_event(log, &ev);
}
