/* What DNS exfiltration looks like in a network log: names queried but never requested over
 * HTTP(S), long, high in entropy, or many under one parent domain. Heuristics for a human to
 * look at, never a verdict. */
#ifndef AUDIT_DNS_H
#define AUDIT_DNS_H

#include <stddef.h>

#define AUDIT_DNS_LONG_NAME 64     /* a name this long or longer is flagged */
#define AUDIT_DNS_LONG_LABEL 40    /* ... or one with a label this long */
#define AUDIT_DNS_ENTROPY_MIN 16   /* characters needed before entropy means anything */
#define AUDIT_DNS_ENTROPY_BITS 3.7 /* bits per character: random-looking text */
#define AUDIT_DNS_SIBLINGS 10      /* never-requested names under one parent: flagged */

enum {
    AUDIT_DNS_FLAG_LONG = 1,
    AUDIT_DNS_FLAG_ENTROPY = 2,
    AUDIT_DNS_FLAG_SIBLINGS = 4,
};

/* Shannon entropy (bits per character) of the name's labels left of its parent domain (the
 * first label for names of two labels or fewer), dots left out; *n gets how many characters
 * that was. name is borrowed. */
double audit_dns_entropy(const char *name, size_t len, size_t *n);

/* AUDIT_DNS_FLAG_LONG | AUDIT_DNS_FLAG_ENTROPY as they apply to name. */
int audit_dns_flags(const char *name, size_t len);

/* The parent domain: the last two labels (no public-suffix list: "co.uk" names group under
 * their registrar-level parent too coarsely, which only makes the sibling flag louder).
 * Returns the offset in name where it starts. */
size_t audit_dns_parent(const char *name, size_t len);

#endif
