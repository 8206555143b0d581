/* airlock: the command line. `run` is here; the other subcommands live in px_cli_*.c and
 * px_health.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/px_cli.h"
#include "proxy/px_config.h"
#include "app/px_engine.h"
#include "base/px_err.h"
#include "app/px_health.h"
#include "proxy/px_log.h"

static const char px__usage[] =
    "airlock - an egress gate for AI-agent containers\n"
    "\n"
    "usage:\n"
    "  airlock run [options]            run the DNS responder and the proxy\n"
    "%s%s%s%s"
    "  airlock health [--http A:P] [--https A:P] [--dns A:P]\n"
    "                                   exit 0 when the named listeners answer (1 s)\n"
    "  airlock --help | --version\n"
    "\n"
    "run options (defaults in brackets):\n"
    "  --proxy-ip IP              the address DNS answers with [env PROXY_IP]\n"
    "  --upstream-dns IP[:PORT]   resolver for real names, required [env UPSTREAM_DNS]\n"
    "  --allowlist PATH           [/network-allowlist.json]\n"
    "  --allowlist-format FMT     auto (detect), native, domain-list or agentbox [auto]\n"
    "  --replacements PATH        [/replacements.json]\n"
    "  --log PATH                 network log, appended if it exists [/network-sandbox.log]\n"
    "  --log-create               create the log file when missing\n"
    "  --log-format FMT           the network log's lines: text, or json (one JSON object\n"
    "                             per event, docs/events.md) [text]\n"
    "  --control PATH             a unix socket (mode 0600) where `airlock pending`,\n"
    "                             `approve` and `deny` answer held requests [off]\n"
    "  --decide-url URL           POST each held request's summary to URL (http:// or\n"
    "                             https://), which answers allow or deny [off]\n"
    "  --events PATH              also write every event as JSON to PATH (created when\n"
    "                             missing, appended), beside the log [off]\n"
    "  --sandboxes DIR            many sandboxes, one per subdirectory, chosen by source\n"
    "                             address (--log is then the host log) [off]\n"
    "  --confdir DIR              CA directory [/mitmproxy-confdir]\n"
    "  --ca-per-conversation      a CA that signs only for the allowlist's hosts, created\n"
    "                             in the confdir when absent (never an unconstrained one);\n"
    "                             with --sandboxes, one per sandbox from its own allowlist\n"
    "  --ca-days N                that CA's validity in days [7]\n"
    "  --upstream-ca PATH         CA bundle for upstream TLS [system bundle]\n"
    "  --allow-upstream-cidr CIDR allow upstream addresses otherwise refused (repeatable)\n"
    "  --listen-dns ADDR:PORT     [0.0.0.0:53]   (\"off\" disables a listener)\n"
    "  --listen-http ADDR:PORT    [0.0.0.0:80]\n"
    "  --listen-https ADDR:PORT   [0.0.0.0:443]\n"
    "  --listen-proxy ADDR:PORT   explicit forward proxy (HTTP_PROXY, CONNECT) [off]\n"
    "  --listen-transparent A:P   connections redirected by iptables/nftables [off]\n"
    "  --listen-socks ADDR:PORT   SOCKS5, no authentication, CONNECT only (ALL_PROXY) [off]\n"
    "  --metrics ADDR:PORT        Prometheus /metrics on a listener of its own [off]\n"
    "  --scrub-responses on|off   real values in answers become surrogates again [on]\n"
    "  --client-idle-timeout S    idle client connection [600]\n"
    "  --upstream-timeout S       upstream first byte / stall [600]\n"
    "  --connect-timeout S        upstream connect [10]\n"
    "  --handshake-timeout S      client TLS handshake [10]\n"
    "  --workers N|auto           event loops serving connections, each on a thread of its\n"
    "                             own (auto: the CPUs airlock may use) [1; env\n"
    "                             AIRLOCK_WORKERS]\n"
    "  --verbose                  more diagnostics on stderr\n"
    "\n"
    "signals: SIGHUP reloads the allowlist; SIGTERM/SIGINT stop cleanly.\n";

static void px__print_usage(FILE *f)
{
    fprintf(f, px__usage, px_cli_policy_usage, px_cli_audit_usage, px_cli_ca_usage,
            px_cli_hold_usage);
}

static int px__cmd_run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            px__print_usage(stdout);
            return 0;
        }
    }
    px_config_t cfg;
    px_config_defaults(&cfg);
    char err[512];
    int rc = px_config_parse_run(&cfg, argc, argv, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "airlock: error: %s\n", err);
        return rc;
    }
    if (cfg.verbose > 0)
        px_diag_set_level(PX_DIAG_WARN + cfg.verbose);
    if (px_log_configure(cfg.log_json, cfg.events_path, cfg.sandboxes_dir, err, sizeof(err)) != 0) {
        fprintf(stderr, "airlock: error: %s\n", err);
        return 1;
    }
    rc = px_engine_run(&cfg);
    px_log_unconfigure(); /* drains the events sink */
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        px__print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        px__print_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("airlock %s\n", AIRLOCK_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return px__cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return px_cli_check(argc - 1, argv + 1);
    if (strcmp(cmd, "explain") == 0)
        return px_cli_explain(argc - 1, argv + 1);
    if (strcmp(cmd, "ca") == 0)
        return px_cli_ca(argc - 1, argv + 1);
    if (strcmp(cmd, "health") == 0)
        return px_health_main(argc - 1, argv + 1);
    if (px_cli_hold_handles(cmd))
        return px_cli_hold(argc - 1, argv + 1);
    if (px_cli_audit_handles(cmd))
        return px_cli_audit(argc - 1, argv + 1);
    fprintf(stderr, "airlock: unknown command '%s' (see airlock --help)\n", cmd);
    return 2;
}
