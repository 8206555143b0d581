/* `airlock pending`, `airlock approve` and `airlock deny`: the deciders' commands, talking to
 * a running airlock over its control socket (px_control.h; docs/approvals.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/px_cli.h"
#include "app/px_control.h"
#include "base/px_limits.h"
#include <uv.h>

const char px_cli_hold_usage[] =
    "  airlock pending [--control PATH] [--follow]\n"
    "                                   list held requests (--follow: stream new ones and\n"
    "                                   each decision)\n"
    "  airlock approve ID [--scope once|conversation] [--control PATH]\n"
    "  airlock deny ID [--control PATH]  answer a held request (docs/approvals.md)\n";

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
    return strcmp(cmd, "pending") == 0 || strcmp(cmd, "approve") == 0 || strcmp(cmd, "deny") == 0;
}

int px_cli_hold(int argc, char **argv)
{
    const char *cmd = argv[0], *control = NULL, *id = NULL, *scope = "once";
    int follow = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--control") == 0 && i + 1 < argc)
            control = argv[++i];
        else if (strcmp(argv[i], "--follow") == 0 && strcmp(cmd, "pending") == 0)
            follow = 1;
        else if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc && strcmp(cmd, "approve") == 0)
            scope = argv[++i];
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
    if (strcmp(scope, "once") != 0 && strcmp(scope, "conversation") != 0) {
        fprintf(stderr, "airlock approve: --scope once or conversation\n");
        return 2;
    }
    char line[96];
    if (strcmp(cmd, "approve") == 0)
        snprintf(line, sizeof(line), "approve %s %s\n", id, scope);
    else
        snprintf(line, sizeof(line), "deny %s\n", id);
    return px__talk(control, line, 0, 0);
}
