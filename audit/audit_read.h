/* Streaming line reader for network logs: one fixed buffer, whatever the file's size. */
#ifndef AUDIT_READ_H
#define AUDIT_READ_H

#include <stddef.h>

#define AUDIT_READ_BUF (1024 * 1024) /* bytes read at a time */

/* Called once per line: line[0..len) without its newline (borrowed for the call), its 1-based
 * number. overlong is 1 for a line longer than AUDIT_LINE_MAX (a JSON event line:
 * AUDIT_JSON_LINE_MAX; then len is 0: its bytes were skipped). A non-zero return stops the reading
 * and is returned by audit_read_file. */
typedef int (*audit_line_cb)(void *arg, unsigned long lineno, const char *line, size_t len,
                             int overlong);

/* Reads path ("-" = standard input) line by line. 0 when every line was handed over; the
 * callback's non-zero value; or PX_EIO / PX_ENOENT / PX_ENOMEM with a reason in err. A last
 * line without a newline is handed over too. A JSON event line (starting with '{',
 * docs/events.md) is handed over as the text line of the same event (audit_jread_line()). */
int audit_read_file(const char *path, audit_line_cb cb, void *arg, char *err, size_t errlen);

#endif
