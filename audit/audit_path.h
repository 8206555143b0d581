/* Path patterns for grouping requests in the audit outputs: "/repos/17/pulls/3?x=1" and
 * "/repos/18/pulls/9" both read "/repos/ID/pulls/ID?Q" with ID written '*' and Q '*'. A segment is
 * an identifier (written
 * '*') when it is all digits, 8+ hex digits and dashes (ids, UUIDs, hashes), or a 20+ byte
 * token mixing letters and digits. The query becomes "?*". Display only: never a policy
 * pattern. */
#ifndef AUDIT_PATH_H
#define AUDIT_PATH_H

#include <stddef.h>

#define AUDIT_PATTERN_MAX 256 /* bytes of a pattern; longer ones end with "..." */

/* Writes the pattern of path[0..len) (borrowed, as logged) into out (cap bytes, NUL-
 * terminated; cap >= 8). Returns its length. */
size_t audit_path_pattern(const char *path, size_t len, char *out, size_t cap);

#endif
