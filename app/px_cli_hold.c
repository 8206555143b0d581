/* `airlock pending`, `airlock approve` and `airlock deny`: the deciders' commands, talking to
 * a running airlock over its control socket (px_control.h; docs/approvals.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/px_cli.h"
#include "app/px_control.h"
#include "base/px_limits.h"
#include "proxy/px_drafts.h"
#include <uv.h>

const char px_cli_hold_usage[] =
    "  airlock pending [--control PATH] [--follow]\n"
    "                                   list held requests (--follow: stream new ones and\n"
    "                                   each decision)\n"
    "  airlock approve ID [--scope once|conversation|persist] [--path PATTERN]\n"
    "                  [--methods GET,POST] [--control PATH]\n"
    "  airlock deny ID [--control PATH]  answer a held request (docs/approvals.md)\n"
    "  airlock approvals list|undo ID [--control PATH [--sandbox NAME] | --allowlist FILE]\n"
    "                                   the persisted approvals (the drafts file)\n";

/* Sends line to the control socket at path and copies what comes back to stdout, line by line,
 * until a line that ends the answer ("end", "ok ...", "error ...") unless stream is set. 0 when
 * the answer was not an error, 1 otherwise. */
static int px__talk(const char *path, const char *line, int stream, int table)
{
    int fd;
    int rc = px_control_connect(path, &fd);
    if (rc != 0) {
        fprintf(stderr, "airlock: cannot reach the control socket %s: %s\n", path, uv_strerror(rc));
        return 1;
    }
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
        close(fd);
        fprintf(stderr, "airlock: the control socket %s closed\n", path);
        return 1;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        close(fd);
        return 1;
    }
    if (table)
        printf("%-6s %-5s %-5s %-4s %-10s %-7s %s\n", "ID", "AGE", "LEFT", "REQS", "SANDBOX",
               "METHOD", "URL");
    char buf[PX_HOLD_FIELD_MAX * 5 + 2048];
    int status = 1, listed = 0;
    while (fgets(buf, sizeof(buf), f) != NULL) {
        char id[32], age[32], left[32], sb[80], m[32], host[1100];
        unsigned reqs;
        int pathat = 0;
        if (strncmp(buf, "end", 3) == 0 && !stream) {
            status = 0;
            break;
        }
        if (strncmp(buf, "end", 3) == 0) {
            if (table && !listed)
                printf("(nothing held; waiting)\n");
            fflush(stdout);
            continue;
        }
        int hold = strncmp(buf, "hold ", 5) == 0;
        if (table && hold &&
            sscanf(buf, "hold %31s %31s %31s %u %79s %31s %1099s %n", id, age, left, &reqs, sb, m,
                   host, &pathat) == 7 &&
            pathat > 0) {
            listed = 1;
            printf("%-6s %-5s %-5s %-4u %-10s %-7s %s%s", id, age, left, reqs, sb, m, host,
                   buf + pathat);
        } else {
            fputs(buf, stdout);
        }
        fflush(stdout);
        if (strncmp(buf, "ok ", 3) == 0) {
            status = 0;
            break;
        }
        if (strncmp(buf, "error", 5) == 0)
            break;
    }
    fclose(f);
    return status;
}

/* --control PATH, or $AIRLOCK_CONTROL. */
static const char *px__control_path(const char *given)
{
    if (given != NULL)
        return given;
    const char *e = getenv("AIRLOCK_CONTROL");
    return e != NULL && *e != '\0' ? e : NULL;
}

int px_cli_hold_handles(const char *cmd)
{
    return strcmp(cmd, "pending") == 0 || strcmp(cmd, "approve") == 0 || strcmp(cmd, "deny") == 0 ||
           strcmp(cmd, "approvals") == 0;
}

static void px__approval_row(const char *id, const char *who, const char *when, const char *methods,
                             const char *host, const char *path)
{
    printf("%-5s %-12s %-21s %-10s %s%s\n", id, who, when, methods, host, path);
}

/* `airlock approvals list|undo` on the drafts file beside allowlist, without a running
 * airlock (it reads the file again on SIGHUP). */
static int px__approvals_file(const char *allowlist, const char *sub, const char *id)
{
    char file[4096], err[1024];
    if (px_drafts_path(allowlist, file, sizeof(file)) != 0) {
        fprintf(stderr, "airlock approvals: %s: path too long\n", allowlist);
        return 2;
    }
    if (strcmp(sub, "undo") == 0) {
        unsigned n = 0;
        char end;
        if (sscanf(id, "a%u%c", &n, &end) != 1 || n == 0) {
            fprintf(stderr, "airlock approvals undo: expected an approval ID (a3)\n");
            return 2;
        }
        px_draft_t gone;
        if (px_drafts_remove(file, n, &gone, err, sizeof(err)) != 0) {
            fprintf(stderr, "airlock approvals undo: %s\n", err);
            return 1;
        }
        free(gone.host);
        free(gone.path);
        printf("ok a%u removed from %s (a running airlock drops it on SIGHUP)\n", n, file);
        return 0;
    }
    px_drafts_t set;
    if (px_drafts_read(file, &set, err, sizeof(err)) != 0) {
        fprintf(stderr, "airlock approvals list: %s\n", err);
        return 1;
    }
    px__approval_row("ID", "WHO", "WHEN", "METHODS", "HOST", "PATH");
    for (size_t i = 0; i < set.n; i++) {
        const px_draft_t *d = &set.v[i];
        char aid[16];
        snprintf(aid, sizeof(aid), "a%u", d->id);
        px__approval_row(aid, d->who, d->when, d->methods[0] != '\0' ? d->methods : "-", d->host,
                         d->path[0] != '\0' ? d->path : "*");
    }
    px_drafts_free(&set);
    return 0;
}

/* `airlock approvals list|undo` through a running airlock's control socket. */
static int px__approvals_control(const char *control, const char *sub, const char *id,
                                 const char *sandbox)
{
    char line[160];
    if (strcmp(sub, "undo") == 0) {
        snprintf(line, sizeof(line), "undo %.24s%s%.64s\n", id, sandbox != NULL ? " " : "",
                 sandbox != NULL ? sandbox : "");
        return px__talk(control, line, 0, 0);
    }
    snprintf(line, sizeof(line), "approvals%s%.64s\n", sandbox != NULL ? " " : "",
             sandbox != NULL ? sandbox : "");
    int fd;
    int rc = px_control_connect(control, &fd);
    if (rc != 0) {
        fprintf(stderr, "airlock: cannot reach the control socket %s: %s\n", control,
                uv_strerror(rc));
        return 1;
    }
    FILE *f = fdopen(fd, "r+");
    if (f == NULL) {
        close(fd);
        return 1;
    }
    fputs(line, f);
    fflush(f);
    px__approval_row("ID", "WHO", "WHEN", "METHODS", "HOST", "PATH");
    char buf[PX_HOLD_FIELD_MAX * 3 + 512];
    int status = 1;
    while (fgets(buf, sizeof(buf), f) != NULL) {
        char aid[16], when[40], m[160], host[300], path[PX_HOLD_FIELD_MAX + 1];
        int who = 0;
        buf[strcspn(buf, "\n")] = '\0';
        if (strcmp(buf, "end") == 0) {
            status = 0;
            break;
        }
        if (sscanf(buf, "approval %15s %39s %159s %299s %2048s %n", aid, when, m, host, path,
                   &who) == 5 &&
            who > 0) {
            px__approval_row(aid, buf + who, when, m, host, strcmp(path, "-") == 0 ? "*" : path);
            continue;
        }
        fprintf(stderr, "airlock approvals: %s\n", buf);
        break;
    }
    fclose(f);
    return status;
}

static int px__approvals(int argc, char **argv)
{
    const char *control = NULL, *allowlist = NULL, *sandbox = NULL, *sub = NULL, *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--control") == 0 && i + 1 < argc)
            control = argv[++i];
        else if (strcmp(argv[i], "--allowlist") == 0 && i + 1 < argc)
            allowlist = argv[++i];
        else if (strcmp(argv[i], "--sandbox") == 0 && i + 1 < argc)
            sandbox = argv[++i];
        else if (argv[i][0] != '-' && sub == NULL)
            sub = argv[i];
        else if (argv[i][0] != '-' && id == NULL && sub != NULL && strcmp(sub, "undo") == 0)
            id = argv[i];
        else {
            fprintf(stderr, "airlock approvals: unexpected argument '%s'\n%s", argv[i],
                    px_cli_hold_usage);
            return 2;
        }
    }
    if (sub == NULL || (strcmp(sub, "list") != 0 && strcmp(sub, "undo") != 0) ||
        (strcmp(sub, "undo") == 0 && id == NULL) || (allowlist != NULL && sandbox != NULL)) {
        fprintf(stderr, "airlock approvals: usage:\n%s", px_cli_hold_usage);
        return 2;
    }
    if (allowlist != NULL)
        return px__approvals_file(allowlist, sub, id);
    control = px__control_path(control);
    if (control == NULL) {
        fprintf(stderr, "airlock approvals: name the control socket (--control PATH or "
                        "AIRLOCK_CONTROL) or the allowlist (--allowlist FILE)\n");
        return 2;
    }
    return px__approvals_control(control, sub, id, sandbox);
}

int px_cli_hold(int argc, char **argv)
{
    const char *cmd = argv[0], *control = NULL, *id = NULL, *scope = "once";
    const char *path = NULL, *methods = NULL;
    int follow = 0;
    if (strcmp(cmd, "approvals") == 0)
        return px__approvals(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--control") == 0 && i + 1 < argc)
            control = argv[++i];
        else if (strcmp(argv[i], "--follow") == 0 && strcmp(cmd, "pending") == 0)
            follow = 1;
        else if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc && strcmp(cmd, "approve") == 0)
            scope = argv[++i];
        else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc && strcmp(cmd, "approve") == 0)
            path = argv[++i];
        else if (strcmp(argv[i], "--methods") == 0 && i + 1 < argc && strcmp(cmd, "approve") == 0)
            methods = argv[++i];
        else if (argv[i][0] != '-' && id == NULL && strcmp(cmd, "pending") != 0)
            id = argv[i];
        else {
            fprintf(stderr, "airlock %s: unexpected argument '%s'\n%s", cmd, argv[i],
                    px_cli_hold_usage);
            return 2;
        }
    }
    control = px__control_path(control);
    if (control == NULL) {
        fprintf(stderr,
                "airlock %s: name the control socket (--control PATH or "
                "AIRLOCK_CONTROL)\n",
                cmd);
        return 2;
    }
    if (strcmp(cmd, "pending") == 0)
        return px__talk(control, follow ? "follow\n" : "list\n", follow, 1);
    if (id == NULL || strlen(id) > 24) {
        fprintf(stderr, "airlock %s: expected a hold ID (as `airlock pending` lists it)\n", cmd);
        return 2;
    }
    if (strcmp(scope, "once") != 0 && strcmp(scope, "conversation") != 0 &&
        strcmp(scope, "persist") != 0) {
        fprintf(stderr, "airlock approve: --scope once, conversation or persist\n");
        return 2;
    }
    /* one word each on the control socket's line (checked there against the held request) */
    if ((path != NULL && (strpbrk(path, " \t\r\n") != NULL || strlen(path) > 400)) ||
        (methods != NULL && (strpbrk(methods, " \t\r\n") != NULL || strlen(methods) > 64))) {
        fprintf(stderr, "airlock approve: --path and --methods take one word each\n");
        return 2;
    }
    char line[PX_CONTROL_LINE_MAX];
    if (strcmp(cmd, "approve") == 0)
        snprintf(line, sizeof(line), "approve %s %s%s%s%s%s\n", id, scope,
                 path != NULL ? " path " : "", path != NULL ? path : "",
                 methods != NULL ? " methods " : "", methods != NULL ? methods : "");
    else
        snprintf(line, sizeof(line), "deny %s\n", id);
    return px__talk(control, line, 0, 0);
}
