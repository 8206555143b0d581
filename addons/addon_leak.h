/* Leak scanning (issue 21 part 2, docs/leak-scanning.md): finds the real value of a secret, or
 * a canary, in the bytes a request carries, whatever encoding the agent used.
 *
 * A matcher is built once per replacements snapshot from a list of (name, value, kind). Every
 * value becomes several byte patterns: raw; URL-encoded (every byte outside the unreserved
 * A-Za-z0-9-._~ as %XX, upper and lower hex digits); base64 standard and URL-safe, as the three
 * alignment-stable inner substrings (the value may sit at any offset mod 3 inside a larger
 * base64 text: the characters whose bits mix with neighbouring bytes are dropped); hex, lower
 * and upper. One Aho-Corasick automaton holds every pattern. Short texts run through it, with a
 * Wu-Manber shift table (by a hash of a window's last 4 bytes) skipping text while it is at its
 * root; long pieces are sampled, one hashed 4-byte gram every (shortest pattern - 3) bytes, and
 * the automaton only runs over their edges (addons/addon_leak_scan.c).
 *
 * The matcher is immutable after it is built and may be shared by any number of streams; a
 * stream's whole state is an addon_leak_state_t (a node number and a byte count), so a pattern
 * split across chunks is found and a stream costs no memory beyond that struct. Pattern bytes
 * are wiped when the matcher is freed; the matcher never logs a value, only names. */
#ifndef ADDON_LEAK_H
#define ADDON_LEAK_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"
#include "addons/addon_replacements.h"

/* Values shorter than this are not scanned for (the builder warns): an 8-byte value already
 * gives 10-character base64 cores; a shorter one (a PIN, "admin", "true") would also match
 * ordinary text and binary bodies by chance and refuse innocent requests, and a real
 * credential is never that short. */
#define ADDON_LEAK_MIN_LEN 8
#define ADDON_LEAK_MAX_PATTERN_BYTES (16u * 1024 * 1024) /* all patterns of one matcher */

/* The message of every 403 blocked_secret_leak answer (a request, a CONNECT). */
#define ADDON_LEAK_MESSAGE                                                                         \
    "The request carries the real value of a credential airlock holds, or a canary planted "       \
    "in the sandbox; it was not sent."

typedef struct addon_leak addon_leak_t;

typedef enum addon_leak_kind {
    ADDON_LEAK_SECRET = 1, /* a real value from the replacements file */
    ADDON_LEAK_CANARY,     /* a string planted in the sandbox */
} addon_leak_kind_t;

typedef enum addon_leak_enc {
    ADDON_LEAK_RAW = 0,
    ADDON_LEAK_URL,       /* percent-encoded */
    ADDON_LEAK_BASE64,    /* standard alphabet (+/) */
    ADDON_LEAK_BASE64URL, /* URL-safe alphabet (-_) */
    ADDON_LEAK_HEX,
} addon_leak_enc_t;

/* One value to look for. Every view is borrowed during addon_leak_new only. */
typedef struct addon_leak_item {
    addon_str_t name; /* what the log line shows: "entry[3].value", a canary's name */
    addon_str_t value;
    addon_leak_kind_t kind;
} addon_leak_item_t;

/* A match: name is borrowed from the matcher (valid while it lives); end is the stream offset
 * one past the match's last byte (the earliest-ending match is reported). */
typedef struct addon_leak_match {
    const char *name;
    addon_leak_kind_t kind;
    addon_leak_enc_t enc;
    uint64_t end;
} addon_leak_match_t;

/* Per-stream state; embed it in the exchange and start it with addon_leak_state_init. */
typedef struct addon_leak_state {
    uint32_t node;
    uint64_t pos;
} addon_leak_state_t;

/* Builds a matcher from items[0..n) (borrowed). Values shorter than ADDON_LEAK_MIN_LEN are
 * skipped with one line each in warn (snprintf-style, may be NULL): "secret NAME: shorter
 * than 8 bytes, not scanned for\n"; *nwarn (may be NULL) gets their count. 0 and *out (maybe
 * a matcher with no pattern: it never matches); PX_ENOMEM, or PX_ETOOBIG past
 * ADDON_LEAK_MAX_PATTERN_BYTES. */
int addon_leak_new(const addon_leak_item_t *items, size_t n, addon_leak_t **out, char *warn,
                   size_t warnlen, size_t *nwarn);

/* addon_leak_new over r (borrowed; NULL is empty): the masked values ("entry[i].value"), the
 * aws-sigv4 access key id, secret key and session token ("entry[i].secret_access_key", ...) as
 * secrets, and the canaries under their names. */
int addon_leak_from_replacements(const addon_replacements_t *r, addon_leak_t **out, char *warn,
                                 size_t warnlen, size_t *nwarn);

/* Wipes the patterns and frees m. NULL is allowed. */
void addon_leak_free(addon_leak_t *m);

void addon_leak_state_init(addon_leak_state_t *st);

/* Scans data[0..len) (borrowed) as the continuation of the stream in st. 0 when nothing
 * matched (st then covers the whole piece). 1 and *match at the first match ending in this
 * piece; st then stops just past it: to go on, feed data + (match->end - the stream offset
 * before the call). The proxy refuses at the first match and never needs to. m may be NULL
 * (never matches). */
int addon_leak_feed(const addon_leak_t *m, addon_leak_state_t *st, const void *data, size_t len,
                    addon_leak_match_t *match);

/* One-shot scan of a whole text (a URL, one header value): addon_leak_feed on a fresh state. */
int addon_leak_scan(const addon_leak_t *m, const void *data, size_t len, addon_leak_match_t *match);

/* The patterns, for tests and the fuzzer: count, then pattern i's bytes (borrowed from m) and
 * what it encodes. */
size_t addon_leak_pattern_count(const addon_leak_t *m);
addon_str_t addon_leak_pattern(const addon_leak_t *m, size_t i, addon_leak_enc_t *enc,
                               const char **name);

/* The longest pattern in bytes (what a caller holding a tail would need; the scan itself keeps
 * none). */
size_t addon_leak_max_pattern_len(const addon_leak_t *m);

/* How many of the last bytes fed to st may still begin a pattern (the automaton's depth; less
 * than addon_leak_max_pattern_len when nothing matched): a caller that must never send part of
 * a value holds those back, and may send everything before them. */
size_t addon_leak_pending(const addon_leak_t *m, const addon_leak_state_t *st);

/* "raw", "url", "base64", "base64url", "hex"; "secret", "canary". */
const char *addon_leak_enc_name(addon_leak_enc_t enc);
const char *addon_leak_kind_name(addon_leak_kind_t kind);

#endif
