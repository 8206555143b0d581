/* `airlock replay`: re-decides every request of network logs under a candidate allowlist and
 * reports what would change, grouped by host and path pattern, with the entry (or pre-check)
 * that decides each. Lines it cannot re-decide, and lines it cannot read, are counted and
 * named. Streaming: memory grows with the distinct changes, up to AUDIT_REPLAY_GROUPS_MAX. */
#ifndef AUDIT_REPLAY_H
#define AUDIT_REPLAY_H

#include <stdio.h>

#include "addons/addon_policy.h"

#define AUDIT_REPLAY_GROUPS_MAX 20000 /* distinct (direction, host, pattern, method) groups */
#define AUDIT_REPLAY_NAMED_MAX 256    /* distinct reasons for lines not re-decided/malformed */
#define AUDIT_REPLAY_EXAMPLE_MAX 240  /* bytes of an example line */

typedef struct audit_replay audit_replay_t;

/* A replay under policy (borrowed until audit_replay_free; NULL = empty). policy_name is
 * shown in the output (borrowed). NULL when out of memory. */
audit_replay_t *audit_replay_new(const addon_policy_t *policy, const char *policy_name);
void audit_replay_free(audit_replay_t *r);

struct addon_replacements;

/* With a candidate replacements map (borrowed until audit_replay_free): requests whose line
 * shows a credential swapped ([masked: N]) and that stay allowed, but whose host no entry of
 * repl covers, are reported as changes too (their surrogate would reach upstream unswapped).
 * The log never says which surrogate a request held, so hosts newly in scope are not known. */
void audit_replay_set_replacements(audit_replay_t *r, const struct addon_replacements *repl,
                                   const char *name);

/* Feeds one line of file (borrowed; the name is kept for examples, so it must live as long
 * as r). Arguments as audit_line_cb. Returns 0. */
int audit_replay_line(audit_replay_t *r, const char *file, unsigned long lineno, const char *line,
                      size_t len, int overlong);

/* Marks the start of the next file (for the per-file line counts). */
void audit_replay_file(audit_replay_t *r, const char *file);

/* Writes the summary and the changes. */
void audit_replay_write(const audit_replay_t *r, FILE *out);

/* Requests whose verdict would change, plus credential changes (see above). */
unsigned long audit_replay_changed(const audit_replay_t *r);

/* Lines recognized as network-log lines (0: the input is not a network log). */
unsigned long audit_replay_known_lines(const audit_replay_t *r);

#endif
