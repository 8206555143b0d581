/* airlock: the command line. Subcommands: run, check, explain, ca init (health later). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "addons/addon_replacements.h"
#include "ca/ca.h"
#include "proxy/px_config.h"
#include "proxy/px_engine.h"
#include "proxy/px_err.h"
#include "proxy/px_health.h"
#include "proxy/px_log.h"

static const char px__usage[] =
    "airlock - an egress gate for AI-agent containers\n"
    "\n"
    "usage:\n"
    "  airlock run [options]            run the DNS responder and the proxy\n"
    "  airlock check --allowlist PATH [--replacements PATH]\n"
    "                                   validate the files (exit 1 with file:line:col)\n"
    "  airlock explain --allowlist PATH METHOD URL\n"
    "                                   tell whether a request would be allowed, and why\n"
    "  airlock ca init --confdir DIR    create the CA in DIR unless one is there\n"
    "  airlock health [--http A:P] [--https A:P] [--dns A:P]\n"
    "                                   exit 0 when the named listeners answer (1 s)\n"
    "  airlock --help | --version\n"
    "\n"
    "run options (defaults in brackets):\n"
    "  --proxy-ip IP              the address DNS answers with [env PROXY_IP]\n"
    "  --upstream-dns IP[:PORT]   resolver for real names, required [env UPSTREAM_DNS]\n"
    "  --allowlist PATH           [/network-allowlist.json]\n"
    "  --replacements PATH        [/replacements.json]\n"
    "  --log PATH                 network log, appended if it exists [/network-sandbox.log]\n"
    "  --log-create               create the log file when missing\n"
    "  --confdir DIR              CA directory [/mitmproxy-confdir]\n"
    "  --upstream-ca PATH         CA bundle for upstream TLS [system bundle]\n"
    "  --allow-upstream-cidr CIDR allow upstream addresses otherwise refused (repeatable)\n"
    "  --listen-dns ADDR:PORT     [0.0.0.0:53]   (\"off\" disables a listener)\n"
    "  --listen-http ADDR:PORT    [0.0.0.0:80]\n"
    "  --listen-https ADDR:PORT   [0.0.0.0:443]\n"
    "  --listen-proxy ADDR:PORT   explicit forward proxy (HTTP_PROXY, CONNECT) [off]\n"
    "  --listen-transparent A:P   connections redirected by iptables/nftables [off]\n"
    "  --client-idle-timeout S    idle client connection [600]\n"
    "  --upstream-timeout S       upstream first byte / stall [600]\n"
    "  --connect-timeout S        upstream connect [10]\n"
    "  --verbose                  more diagnostics on stderr\n"
    "\n"
    "signals: SIGHUP reloads the allowlist; SIGTERM/SIGINT stop cleanly.\n";

static int px__cmd_run(int argc, char **argv)
{
    px_config_t cfg;
    px_config_defaults(&cfg);
    char err[512];
    int rc = px_config_parse_run(&cfg, argc, argv, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "airlock: %s\n", err);
        return rc;
    }
    if (cfg.verbose > 0)
        px_diag_set_level(PX_DIAG_WARN + cfg.verbose);
    return px_engine_run(&cfg);
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

static int px__cmd_check(int argc, char **argv)
{
    int bad = 0;
    const char *path = px__flag(argc, argv, "--allowlist", &bad);
    const char *repl = px__flag(argc, argv, "--replacements", &bad);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allowlist") == 0 || strcmp(argv[i], "--replacements") == 0) {
            i++;
            continue;
        }
        fprintf(stderr, "airlock check: unexpected argument '%s'\n", argv[i]);
        return 2;
    }
    if (bad || (path == NULL && repl == NULL)) {
        fprintf(stderr,
                "airlock check: usage: airlock check --allowlist PATH [--replacements PATH]\n");
        return 2;
    }
    int failed = 0;
    if (repl != NULL) {
        addon_replacements_t *r = NULL;
        char rerr[1024];
        int rrc = addon_replacements_load_file(repl, &r, rerr, sizeof(rerr));
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
    int rc = addon_policy_load_file(path, &p, err, sizeof(err));
    if (rc == PX_ENOENT) {
        fprintf(stderr, "%s: file not found\n", path);
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    size_t need = addon_policy_describe(p, NULL, 0);
    char *buf = malloc(need + 1);
    if (buf != NULL) {
        addon_policy_describe(p, buf, need + 1);
        printf("%s: ok\n%s", path, buf);
        free(buf);
    }
    addon_policy_unref(p);
    return failed;
}

static int px__cmd_explain(int argc, char **argv)
{
    const char *path = NULL;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allowlist") == 0 && i + 1 < argc) {
            path = argv[++i];
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
        fprintf(stderr, "airlock explain: usage: airlock explain --allowlist PATH METHOD URL\n");
        return 2;
    }
    const char *method = pos[0];
    const char *url = pos[1];
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
    addon_policy_t *p = NULL;
    char err[1024];
    int rc = addon_policy_load_file(path, &p, err, sizeof(err));
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

static int px__cmd_ca(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "init") != 0) {
        fprintf(stderr, "airlock ca: usage: airlock ca init --confdir DIR\n");
        return 2;
    }
    const char *dir = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--confdir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "airlock ca init: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (dir == NULL) {
        fprintf(stderr, "airlock ca init: --confdir DIR is required\n");
        return 2;
    }
    int result = 0;
    char err[512];
    if (ca_init_confdir(dir, &result, err, sizeof(err)) != 0) {
        fprintf(stderr, "airlock ca init: %s\n", err);
        return 1;
    }
    static const char *const what[] = {"exists", "created", "repaired"};
    printf("%s/%s: %s\n", dir, CA_FILE_KEY_CERT, what[result < 0 || result > 2 ? 0 : result]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(px__usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(px__usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("airlock %s\n", AIRLOCK_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return px__cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return px__cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "explain") == 0)
        return px__cmd_explain(argc - 1, argv + 1);
    if (strcmp(cmd, "ca") == 0)
        return px__cmd_ca(argc - 1, argv + 1);
    if (strcmp(cmd, "health") == 0)
        return px_health_main(argc - 1, argv + 1);
    fprintf(stderr, "airlock: unknown command '%s' (see airlock --help)\n", cmd);
    return 2;
}
