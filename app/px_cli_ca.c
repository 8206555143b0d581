/* `airlock ca init`: the CA files in mitmproxy's layout; with --per-conversation, a fresh CA
 * that can sign only for what the allowlist reaches (px_caconv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca/ca.h"
#include "proxy/px_caconv.h"
#include "app/px_cli.h"

const char px_cli_ca_usage[] =
    "  airlock ca init --confdir DIR    create the CA in DIR unless one is there\n"
    "  airlock ca init --per-conversation --allowlist PATH [--allowlist-format FMT]\n"
    "                  [--days N] [--proxy-ip IP] --confdir DIR\n"
    "                                   create in DIR a CA valid N days (default 7) that can\n"
    "                                   sign only for the hosts the allowlist allows\n";

#define PX__CA_USAGE                                                                               \
    "airlock ca: usage: airlock ca init --confdir DIR [--per-conversation --allowlist PATH "       \
    "[--allowlist-format FMT] [--days N] [--proxy-ip IP]]\n"

typedef struct ca_init_opts {
    const char *dir;
    const char *allowlist;
    const char *format;
    const char *days;
    const char *proxy_ip;
    int per_conversation;
} ca_init_opts_t;

static int parse_opts(int argc, char **argv, ca_init_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--per-conversation") == 0) {
            o->per_conversation = 1;
        } else if (strcmp(a, "--confdir") == 0 && has_value) {
            o->dir = argv[++i];
        } else if (strcmp(a, "--allowlist") == 0 && has_value) {
            o->allowlist = argv[++i];
        } else if (strcmp(a, "--allowlist-format") == 0 && has_value) {
            o->format = argv[++i];
        } else if (strcmp(a, "--days") == 0 && has_value) {
            o->days = argv[++i];
        } else if (strcmp(a, "--proxy-ip") == 0 && has_value) {
            o->proxy_ip = argv[++i];
        } else {
            fprintf(stderr, "airlock ca init: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (o->dir == NULL) {
        fprintf(stderr, "airlock ca init: --confdir DIR is required\n");
        return 2;
    }
    if (!o->per_conversation && (o->allowlist || o->format || o->days || o->proxy_ip)) {
        fprintf(stderr, "airlock ca init: --allowlist, --allowlist-format, --days and --proxy-ip "
                        "need --per-conversation\n");
        return 2;
    }
    if (o->per_conversation && o->allowlist == NULL) {
        fprintf(stderr, "airlock ca init: --per-conversation needs --allowlist PATH (the CA may "
                        "sign only for the hosts it allows)\n");
        return 2;
    }
    return 0;
}

static int init_per_conversation(const ca_init_opts_t *o)
{
    addon_policy_format_t fmt = ADDON_POLICY_FORMAT_AUTO;
    long days = CA_CONV_DEFAULT_DAYS;
    char *end = NULL;
    char err[2048];
    char *desc = NULL;

    if (o->format != NULL && addon_policy_format_parse(o->format, &fmt) != 0) {
        fprintf(stderr,
                "airlock ca init: bad value for --allowlist-format: '%s' (auto, native, "
                "domain-list or agentbox)\n",
                o->format);
        return 2;
    }
    if (o->days != NULL) {
        days = strtol(o->days, &end, 10);
        if (end == o->days || *end != '\0' || days < 1 || days > CA_CONV_MAX_DAYS) {
            fprintf(stderr, "airlock ca init: --days takes 1 to %d (days, not years)\n",
                    CA_CONV_MAX_DAYS);
            return 2;
        }
    }
    if (px_caconv_create(o->dir, o->allowlist, fmt, (int)days, o->proxy_ip, &desc, err,
                         sizeof(err)) != 0) {
        fprintf(stderr, "airlock ca init: %s\n", err);
        return 1;
    }
    printf("%s/%s: created (per conversation, valid %ld days; permits %s)\n", o->dir,
           CA_FILE_KEY_CERT, days, desc != NULL ? desc : "the allowlist's hosts");
    free(desc);
    return 0;
}

int px_cli_ca(int argc, char **argv)
{
    ca_init_opts_t o;

    if (argc < 2 || strcmp(argv[1], "init") != 0) {
        fprintf(stderr, PX__CA_USAGE);
        return 2;
    }
    int rc = parse_opts(argc, argv, &o);
    if (rc != 0) {
        return rc;
    }
    if (o.per_conversation) {
        return init_per_conversation(&o);
    }
    int result = 0;
    char err[512];
    if (ca_init_confdir(o.dir, &result, err, sizeof(err)) != 0) {
        fprintf(stderr, "airlock ca init: %s\n", err);
        return 1;
    }
    static const char *const what[] = {"exists", "created", "repaired"};
    printf("%s/%s: %s\n", o.dir, CA_FILE_KEY_CERT, what[result < 0 || result > 2 ? 0 : result]);
    return 0;
}
