/* `airlock replay`, `airlock report`, `airlock suggest`: the operator's audit tools over
 * network logs (issue 19). The work is in audit/; this file reads the command line, loads the
 * allowlist with the proxy's own loader, and streams each log through the chosen tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "addons/addon_replacements.h"
#include "audit/audit_read.h"
#include "audit/audit_replay.h"
#include "audit/audit_report.h"
#include "audit/audit_suggest.h"
#include "app/px_cli.h"
#include "base/px_err.h"

#define PX__AUDIT_LOGS_MAX 256 /* log files on one command line */

const char px_cli_audit_usage[] =
    "  airlock replay --allowlist NEW [--replacements F] LOG...\n"
    "                                   re-decide logged requests under NEW; list what would\n"
    "                                   change (exit 0 none, 1 some, 2 bad input)\n"
    "  airlock report LOG... -o FILE.html [--allowlist CURRENT]\n"
    "                                   one self-contained HTML report of the logs\n"
    "  airlock suggest LOG... [--allowlist CURRENT]\n"
    "                                   allowlist entries (YAML, to review) for what was blocked\n";

static const char px__replay_help[] =
    "usage: airlock replay --allowlist NEW [--replacements F] LOG...\n"
    "\n"
    "Re-decides every request recorded in the network logs (allowed, BLOCKED and ERROR lines)\n"
    "under the candidate allowlist NEW, with the proxy's own policy code, and prints what\n"
    "would change, grouped by host and path pattern, with the entry or pre-check that decides\n"
    "each. Lines that cannot be re-decided (airlock's own 400/408/431 answers, host\n"
    "mismatches, CONNECT on 80/443, cut lines) and lines that cannot be read are counted and\n"
    "named. With --replacements, requests whose line shows a swapped credential ([masked: N])\n"
    "and whose host no entry of F covers are reported too. LOG may be - (standard input).\n"
    "\n"
    "exit status: 0 nothing would change, 1 something would, 2 bad input (an unreadable log,\n"
    "a file that holds no network-log line, an invalid allowlist or replacements file).\n";

static const char px__report_help[] =
    "usage: airlock report LOG... -o FILE.html [--allowlist CURRENT] [--title TEXT]\n"
    "\n"
    "Writes one self-contained HTML file (no scripts, fonts or images from elsewhere; inline\n"
    "SVG): totals and a timeline, hosts with their verdicts, every blocked request grouped by\n"
    "host and path pattern with a suggested allowlist entry, upstream errors by cause, TLS\n"
    "REJECTED lines, DNS names never requested over HTTP(S) (long or high-entropy ones\n"
    "flagged), and the STRIPPED/COLLAPSED credential lines. The logs are read as a stream:\n"
    "memory is bounded whatever their size. With --allowlist, blocked requests are explained\n"
    "by CURRENT and only what it still blocks gets a suggestion. -o - writes to standard\n"
    "output.\n"
    "\n"
    "exit status: 0 written, 2 bad input.\n";

static const char px__suggest_help[] =
    "usage: airlock suggest LOG... [--allowlist CURRENT]\n"
    "\n"
    "Prints, as YAML for a human to review, the smallest set of url_prefixes entries (one per\n"
    "host: the common path prefix and the methods and ports the requests used) that would\n"
    "allow what the logs show blocked by the allowlist. With --allowlist, only what CURRENT\n"
    "does not already allow. Requests no entry can allow (pre-checks such as a .. segment)\n"
    "and blocked lines the allowlist did not decide are listed as comments. Nothing is\n"
    "applied: add the entries yourself, then check them with airlock replay.\n"
    "\n"
    "exit status: 0 printed, 2 bad input.\n";

int px_cli_audit_handles(const char *cmd)
{
    return strcmp(cmd, "replay") == 0 || strcmp(cmd, "report") == 0 || strcmp(cmd, "suggest") == 0;
}

typedef struct px__audit_args {
    const char *allowlist;
    const char *replacements;
    const char *output;
    const char *title;
    const char *logs[PX__AUDIT_LOGS_MAX];
    int nlogs;
    int help;
} px__audit_args_t;

/* Options may come before, between or after the logs. allowed: the flags this command takes. */
static int px__audit_parse(int argc, char **argv, const char *allowed, px__audit_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->help = 1;
            return 0;
        }
        const char **dst = NULL;
        if (strcmp(s, "--allowlist") == 0)
            dst = &a->allowlist;
        else if (strcmp(s, "--replacements") == 0)
            dst = &a->replacements;
        else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0)
            dst = &a->output;
        else if (strcmp(s, "--title") == 0)
            dst = &a->title;
        if (dst != NULL) {
            char flag[24];
            snprintf(flag, sizeof(flag), "%s ", strcmp(s, "--output") == 0 ? "-o" : s);
            if (strstr(allowed, flag) == NULL) {
                fprintf(stderr, "airlock %s: %s is not an option of this command\n", argv[0], s);
                return 2;
            }
            if (i + 1 >= argc) {
                fprintf(stderr, "airlock %s: %s needs a value\n", argv[0], s);
                return 2;
            }
            *dst = argv[++i];
            continue;
        }
        if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "airlock %s: unknown option %s (see airlock %s --help)\n", argv[0], s,
                    argv[0]);
            return 2;
        }
        if (a->nlogs >= PX__AUDIT_LOGS_MAX) {
            fprintf(stderr, "airlock %s: more than %d logs\n", argv[0], PX__AUDIT_LOGS_MAX);
            return 2;
        }
        a->logs[a->nlogs++] = s;
    }
    if (a->nlogs == 0 && !a->help) {
        fprintf(stderr, "airlock %s: no LOG given (see airlock %s --help)\n", argv[0], argv[0]);
        return 2;
    }
    return 0;
}

/* Loads an allowlist; a missing file is bad input here (a candidate must exist). */
static int px__audit_policy(const char *cmd, const char *path, addon_policy_t **out)
{
    char err[1024];
    int rc = addon_policy_load_file(path, out, err, sizeof(err));
    if (rc == PX_ENOENT) {
        fprintf(stderr, "airlock %s: %s: file not found\n", cmd, path);
        return 2;
    }
    if (rc != 0) {
        fprintf(stderr, "airlock %s: %s\n", cmd, err);
        return 2;
    }
    return 0;
}

typedef int (*px__audit_feed_fn)(void *tool, const char *file, unsigned long lineno,
                                 const char *line, size_t len, int overlong);

typedef struct px__audit_feed {
    px__audit_feed_fn fn;
    void *tool;
    const char *file;
} px__audit_feed_t;

static int on_audit_line(void *arg, unsigned long lineno, const char *line, size_t len,
                         int overlong)
{
    px__audit_feed_t *f = arg;
    return f->fn(f->tool, f->file, lineno, line, len, overlong);
}

/* Streams every log through fn. 0, or 2 after saying which log could not be read. */
static int px__audit_feed_all(const char *cmd, const px__audit_args_t *a, px__audit_feed_fn fn,
                              void *tool, void (*file_fn)(void *, const char *))
{
    for (int i = 0; i < a->nlogs; i++) {
        if (file_fn != NULL)
            file_fn(tool, a->logs[i]);
        px__audit_feed_t f = {fn, tool, a->logs[i]};
        char err[512];
        int rc = audit_read_file(a->logs[i], on_audit_line, &f, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "airlock %s: %s\n", cmd, err);
            return 2;
        }
    }
    return 0;
}

static int px__replay_feed(void *t, const char *file, unsigned long n, const char *line, size_t len,
                           int overlong)
{
    return audit_replay_line(t, file, n, line, len, overlong);
}

static void px__replay_file(void *t, const char *file)
{
    audit_replay_file(t, file);
}

static int px__cmd_replay(int argc, char **argv)
{
    px__audit_args_t a;
    int rc = px__audit_parse(argc, argv, "--allowlist --replacements ", &a);
    if (rc != 0)
        return rc;
    if (a.help) {
        fputs(px__replay_help, stdout);
        return 0;
    }
    if (a.allowlist == NULL) {
        fprintf(stderr, "airlock replay: --allowlist NEW is required (see airlock replay "
                        "--help)\n");
        return 2;
    }
    addon_policy_t *p = NULL;
    rc = px__audit_policy("replay", a.allowlist, &p);
    if (rc != 0)
        return rc;
    addon_replacements_t *repl = NULL;
    if (a.replacements != NULL) {
        char err[1024];
        int rrc = addon_replacements_load_file(a.replacements, &repl, err, sizeof(err));
        if (rrc != 0) {
            if (rrc == PX_ENOENT)
                fprintf(stderr, "airlock replay: %s: file not found\n", a.replacements);
            else
                fprintf(stderr, "airlock replay: %s\n", err);
            addon_policy_unref(p);
            return 2;
        }
    }
    audit_replay_t *r = audit_replay_new(p, a.allowlist);
    if (r == NULL) {
        fprintf(stderr, "airlock replay: out of memory\n");
        addon_replacements_unref(repl);
        addon_policy_unref(p);
        return 2;
    }
    if (repl != NULL)
        audit_replay_set_replacements(r, repl, a.replacements);
    rc = px__audit_feed_all("replay", &a, px__replay_feed, r, px__replay_file);
    if (rc == 0 && audit_replay_known_lines(r) == 0) {
        fprintf(stderr, "airlock replay: no network-log line in the input\n");
        rc = 2;
    }
    if (rc == 0) {
        audit_replay_write(r, stdout);
        rc = audit_replay_changed(r) > 0 ? 1 : 0;
    }
    audit_replay_free(r);
    addon_replacements_unref(repl);
    addon_policy_unref(p);
    return rc;
}

static int px__suggest_feed(void *t, const char *file, unsigned long n, const char *line,
                            size_t len, int overlong)
{
    return audit_suggest_line(t, file, n, line, len, overlong);
}

static int px__cmd_suggest(int argc, char **argv)
{
    px__audit_args_t a;
    int rc = px__audit_parse(argc, argv, "--allowlist ", &a);
    if (rc != 0)
        return rc;
    if (a.help) {
        fputs(px__suggest_help, stdout);
        return 0;
    }
    addon_policy_t *p = NULL;
    if (a.allowlist != NULL) {
        rc = px__audit_policy("suggest", a.allowlist, &p);
        if (rc != 0)
            return rc;
    }
    audit_suggest_t *s = audit_suggest_new(p);
    if (s == NULL) {
        fprintf(stderr, "airlock suggest: out of memory\n");
        addon_policy_unref(p);
        return 2;
    }
    rc = px__audit_feed_all("suggest", &a, px__suggest_feed, s, NULL);
    if (rc == 0 && audit_suggest_known_lines(s) == 0) {
        fprintf(stderr, "airlock suggest: no network-log line in the input\n");
        rc = 2;
    }
    if (rc == 0)
        audit_suggest_write(s, stdout);
    audit_suggest_free(s);
    addon_policy_unref(p);
    return rc;
}

static int px__report_feed(void *t, const char *file, unsigned long n, const char *line, size_t len,
                           int overlong)
{
    return audit_report_line(t, file, n, line, len, overlong);
}

static void px__report_file(void *t, const char *file)
{
    audit_report_file(t, file);
}

static int px__cmd_report(int argc, char **argv)
{
    px__audit_args_t a;
    int rc = px__audit_parse(argc, argv, "--allowlist -o --title ", &a);
    if (rc != 0)
        return rc;
    if (a.help) {
        fputs(px__report_help, stdout);
        return 0;
    }
    if (a.output == NULL) {
        fprintf(stderr, "airlock report: -o FILE.html is required (-o - for standard output)\n");
        return 2;
    }
    addon_policy_t *p = NULL;
    if (a.allowlist != NULL) {
        rc = px__audit_policy("report", a.allowlist, &p);
        if (rc != 0)
            return rc;
    }
    audit_report_t *r = audit_report_new(p, a.allowlist);
    if (r == NULL) {
        fprintf(stderr, "airlock report: out of memory\n");
        addon_policy_unref(p);
        return 2;
    }
    rc = px__audit_feed_all("report", &a, px__report_feed, r, px__report_file);
    if (rc == 0 && audit_report_known_lines(r) == 0) {
        fprintf(stderr, "airlock report: no network-log line in the input\n");
        rc = 2;
    }
    if (rc == 0) {
        int to_stdout = strcmp(a.output, "-") == 0;
        FILE *f = to_stdout ? stdout : fopen(a.output, "w");
        if (f == NULL) {
            perror(a.output);
            rc = 2;
        } else {
            audit_report_write_html(r, f, a.title != NULL ? a.title : "airlock network report");
            if (fflush(f) != 0 || ferror(f)) {
                fprintf(stderr, "airlock report: %s: write failed\n", a.output);
                rc = 2;
            }
            if (!to_stdout && fclose(f) != 0 && rc == 0) {
                fprintf(stderr, "airlock report: %s: write failed\n", a.output);
                rc = 2;
            }
        }
    }
    audit_report_free(r);
    addon_policy_unref(p);
    return rc;
}

int px_cli_audit(int argc, char **argv)
{
    if (strcmp(argv[0], "replay") == 0)
        return px__cmd_replay(argc, argv);
    if (strcmp(argv[0], "report") == 0)
        return px__cmd_report(argc, argv);
    if (strcmp(argv[0], "suggest") == 0)
        return px__cmd_suggest(argc, argv);
    fprintf(stderr, "airlock: unknown command '%s' (see airlock --help)\n", argv[0]);
    return 2;
}
