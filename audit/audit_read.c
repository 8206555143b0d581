#include "audit/audit_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit_jread.h"
#include "audit/audit_json.h"
#include "audit/audit_line.h"
#include "base/px_err.h"

/* The longest line read: a JSON event is longer than its text line. */
#define AUDIT__READ_LINE_MAX                                                                       \
    (AUDIT_JSON_LINE_MAX > AUDIT_LINE_MAX ? AUDIT_JSON_LINE_MAX : AUDIT_LINE_MAX)

/* Hands one line to cb: a JSON event (a line starting with '{', `--log-format json` or
 * `--events`) as the text line of the same decision, so every tool reads both formats through
 * the one text parser; anything else as it is (a JSON line that is not an event too: the
 * parser then says it is not airlock's). */
static int audit__hand(audit_line_cb cb, void *arg, unsigned long lineno, const char *line,
                       size_t len, char *text)
{
    size_t max = len > 0 && line[0] == '{' ? AUDIT_JSON_LINE_MAX : AUDIT_LINE_MAX;
    if (len > max)
        return cb(arg, lineno, line, 0, 1);
    if (len > 0 && line[0] == '{') {
        int n = audit_jread_line(line, len, text, AUDIT_EVENT_LINE_CAP);
        if (n >= 0)
            return cb(arg, lineno, text, (size_t)n, 0);
    }
    return cb(arg, lineno, line, len, 0);
}

int audit_read_file(const char *path, audit_line_cb cb, void *arg, char *err, size_t errlen)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? PX_ENOENT : PX_EIO;
    }
    /* room for one whole line beyond what a read brings */
    size_t cap = AUDIT_READ_BUF + AUDIT__READ_LINE_MAX + 1;
    char *buf = malloc(cap + AUDIT_EVENT_LINE_CAP);
    if (buf == NULL) {
        if (fd != STDIN_FILENO)
            close(fd);
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    size_t have = 0;  /* bytes of the current partial line in buf[0..have) */
    int skipping = 0; /* inside an over-long line: drop bytes up to its newline */
    unsigned long lineno = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, cap - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            rc = PX_EIO;
            break;
        }
        if (n == 0) {
            if (have > 0 || skipping) {
                lineno++;
                rc = skipping ? cb(arg, lineno, buf, 0, 1)
                              : audit__hand(cb, arg, lineno, buf, have, buf + cap);
            }
            break;
        }
        size_t end = have + (size_t)n;
        size_t start = 0;
        for (;;) {
            char *nl = memchr(buf + start, '\n', end - start);
            if (nl == NULL)
                break;
            size_t len = (size_t)(nl - (buf + start));
            lineno++;
            if (skipping)
                rc = cb(arg, lineno, buf + start, 0, 1);
            else
                rc = audit__hand(cb, arg, lineno, buf + start, len, buf + cap);
            skipping = 0;
            start += len + 1;
            if (rc != 0)
                break;
        }
        if (rc != 0)
            break;
        have = end - start;
        if (have > AUDIT__READ_LINE_MAX) {
            skipping = 1; /* the rest of this line is dropped as it comes */
            have = 0;
        } else if (have > 0 && start > 0) {
            memmove(buf, buf + start, have);
        }
    }
    free(buf);
    if (fd != STDIN_FILENO)
        close(fd);
    return rc;
}
