/* `airlock check` and `airlock explain`: the allowlist and replacements as an operator sees
 * them, decided by the same code the proxy runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_awssecret.h"
#include "addons/addon_policy.h"
#include "addons/addon_replacements.h"
#include "app/px_cli.h"
#include "proxy/px_drafts.h"
#include "proxy/px_config.h"
#include "base/px_err.h"

const char px_cli_policy_usage[] =
    "  airlock check --allowlist PATH [--allowlist-format FMT] [--print-effective]\n"
    "                [--replacements PATH]\n"
    "                                   validate the files (exit 1 with file:line:col);\n"
    "                                   --print-effective prints the final allowlist as YAML\n"
    "  airlock explain --allowlist PATH [--allowlist-format FMT] METHOD URL\n"
    "                                   tell whether a request would be allowed, and why\n";

/* --allowlist-format's value, or a usage error (2) said on stderr. */
static int px__format(const char *cmd, const char *v, addon_policy_format_t *out)
{
    if (v != NULL && addon_policy_format_parse(v, out) != 0) {
        fprintf(stderr,
                "airlock %s: bad value for --allowlist-format: '%s' (auto, native, domain-list "
                "or agentbox)\n",
                cmd, v);
        return 2;
    }
    return 0;
}

/* Finds "--name VALUE" in argv; removes nothing. */
static const char *px__flag(int argc, char **argv, const char *name, int *bad)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= argc) {
                *bad = 1;
                return NULL;
            }
            return argv[i + 1];
        }
    }
    return NULL;
}

/* `airlock check` fetches nothing: an AWS source's shape is checked by the loader and its value
 * stands in as this text (the describe lines show the source, never a value). */
static int px__check_aws(void *arg, const addon_awssecret_src_t *src, unsigned refresh_seconds,
                         const char **value, size_t *vlen, char *why, size_t whylen)
{
    static const char stand_in[] = "airlock-check-not-fetched";
    (void)arg, (void)src, (void)refresh_seconds, (void)why, (void)whylen;
    *value = stand_in;
    *vlen = sizeof(stand_in) - 1;
    return 0;
}

int px_cli_check(int argc, char **argv)
{
    int bad = 0;
    const char *path = px__flag(argc, argv, "--allowlist", &bad);
    const char *repl = px__flag(argc, argv, "--replacements", &bad);
    const char *fmt_text = px__flag(argc, argv, "--allowlist-format", &bad);
    int effective = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allowlist") == 0 || strcmp(argv[i], "--replacements") == 0 ||
            strcmp(argv[i], "--allowlist-format") == 0) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--print-effective") == 0) {
            effective = 1;
            continue;
        }
        fprintf(stderr, "airlock check: unexpected argument '%s'\n", argv[i]);
        return 2;
    }
    if (bad || (path == NULL && repl == NULL) || (effective && path == NULL)) {
        fprintf(stderr, "airlock check: usage: airlock check --allowlist PATH "
                        "[--allowlist-format FMT] [--print-effective] [--replacements PATH]\n");
        return 2;
    }
    addon_policy_format_t fmt = ADDON_POLICY_FORMAT_AUTO;
    if (px__format("check", fmt_text, &fmt) != 0)
        return 2;
    int failed = 0;
    if (repl != NULL) {
        addon_replacements_t *r = NULL;
        char rerr[1024];
        addon_awssecret_set_lookup(px__check_aws, NULL);
        int rrc = addon_replacements_load_file(repl, &r, rerr, sizeof(rerr));
        addon_awssecret_set_lookup(NULL, NULL);
        if (rrc == PX_ENOENT) {
            fprintf(stderr, "%s: file not found\n", repl);
            failed = 1;
        } else if (rrc != 0) {
            fprintf(stderr, "%s\n", rerr);
            failed = 1;
        } else {
            size_t need = addon_replacements_describe(r, NULL, 0);
            char *buf = malloc(need + 1);
            if (buf != NULL) {
                addon_replacements_describe(r, buf, need + 1);
                printf("%s: ok\n%s", repl, buf);
                free(buf);
            }
            addon_replacements_unref(r);
        }
    }
    if (path == NULL)
        return failed;
    addon_policy_t *p = NULL;
    char err[1024];
    int rc = addon_policy_load_file_as(path, fmt, &p, err, sizeof(err));
    if (rc == PX_ENOENT) {
        fprintf(stderr, "%s: file not found\n", path);
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* the approvals drafts beside it, as airlock run loads them (a broken one fails the check,
     * and the allowlist is shown alone, as airlock run would use it) */
    if (px_drafts_merge(p, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: the approvals drafts are ignored\n", err);
        failed = 1;
    }
    size_t (*text)(const addon_policy_t *, char *, size_t) =
        effective ? addon_policy_print_effective : addon_policy_describe;
    size_t need = text(p, NULL, 0);
    char *buf = malloc(need + 1);
    if (buf != NULL) {
        text(p, buf, need + 1);
        if (effective)
            fputs(buf, stdout);
        else
            printf("%s: ok\n%s", path, buf);
        free(buf);
    }
    addon_policy_unref(p);
    return failed;
}

/* Splits explain's URL into scheme, host (without brackets), port and path+query. Returns 0,
 * or 2 after saying why on stderr. */
static int px__explain_url(const char *url, int *tls_out, const char **host_out, size_t *hlen_out,
                           unsigned long *port_out, const char **pathq_out)
{
    int tls;
    const char *rest;
    if (strncasecmp(url, "https://", 8) == 0) {
        tls = 1;
        rest = url + 8;
    } else if (strncasecmp(url, "http://", 7) == 0) {
        tls = 0;
        rest = url + 7;
    } else {
        fprintf(stderr, "airlock explain: URL must start with http:// or https://\n");
        return 2;
    }
    size_t alen = strcspn(rest, "/?#");
    const char *pathq = rest[alen] != '\0' ? rest + alen : "/";
    if (*pathq == '?') {
        fprintf(stderr, "airlock explain: write the path before the query (http://host/?q)\n");
        return 2;
    }
    const char *host = rest;
    size_t hlen = alen;
    unsigned long port = tls ? 443 : 80;
    const char *colon = NULL;
    if (alen > 0 && rest[0] == '[') {
        const char *close = memchr(rest, ']', alen);
        if (close == NULL) {
            fprintf(stderr, "airlock explain: bad host in URL\n");
            return 2;
        }
        host = rest + 1;
        hlen = (size_t)(close - rest - 1);
        if (close + 1 < rest + alen && close[1] == ':')
            colon = close + 1;
    } else {
        colon = memchr(rest, ':', alen);
        if (colon != NULL)
            hlen = (size_t)(colon - rest);
    }
    if (colon != NULL) {
        char pb[8];
        size_t plen = (size_t)(rest + alen - colon - 1);
        uint64_t v;
        if (plen == 0 || plen >= sizeof(pb)) {
            fprintf(stderr, "airlock explain: bad port in URL\n");
            return 2;
        }
        memcpy(pb, colon + 1, plen);
        pb[plen] = '\0';
        if (px_parse_u64(pb, 1, 65535, &v) != 0) {
            fprintf(stderr, "airlock explain: bad port in URL\n");
            return 2;
        }
        port = v;
    }
    if (hlen == 0) {
        fprintf(stderr, "airlock explain: URL has no host\n");
        return 2;
    }
    *tls_out = tls;
    *host_out = host;
    *hlen_out = hlen;
    *port_out = port;
    *pathq_out = pathq;
    return 0;
}

int px_cli_explain(int argc, char **argv)
{
    const char *path = NULL;
    const char *fmt_text = NULL;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allowlist") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--allowlist-format") == 0 && i + 1 < argc) {
            fmt_text = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "airlock explain: unknown option %s\n", argv[i]);
            return 2;
        } else if (npos < 2) {
            pos[npos++] = argv[i];
        } else {
            fprintf(stderr, "airlock explain: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (path == NULL || npos != 2) {
        fprintf(stderr, "airlock explain: usage: airlock explain --allowlist PATH "
                        "[--allowlist-format FMT] METHOD URL\n");
        return 2;
    }
    addon_policy_format_t fmt = ADDON_POLICY_FORMAT_AUTO;
    if (px__format("explain", fmt_text, &fmt) != 0)
        return 2;
    const char *method = pos[0];
    const char *url = pos[1];
    int tls;
    const char *host, *pathq;
    size_t hlen;
    unsigned long port;
    if (px__explain_url(url, &tls, &host, &hlen, &port, &pathq) != 0)
        return 2;
    addon_policy_t *p = NULL;
    char err[1024];
    int rc = addon_policy_load_file_as(path, fmt, &p, err, sizeof(err));
    if (rc == PX_ENOENT) {
        printf("blocked: allowlist %s not found (everything is blocked)\n", path);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    size_t plen = strcspn(pathq, "#");
    addon_policy_query_t q = {
        .method = {method, strlen(method)},
        .host = {host, hlen},
        .path = {pathq, plen},
        .port = (uint16_t)port,
        .tls = tls,
    };
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    char out[1024];
    addon_policy_explain(p, &q, &d, out, sizeof(out));
    printf("%s\n", out);
    addon_policy_unref(p);
    return 0;
}
