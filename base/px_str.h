/* The byte vocabulary every folder shares: one non-owning byte range and one header field.
 * signing/ (sig_str_t), addons/ (addon_str_t) and audit/ (audit_str_t) name these same types,
 * so a range passes between them without a copy or a cast. */
#ifndef PX_STR_H
#define PX_STR_H

#include <stddef.h>

/* A non-owning byte range; no NUL terminator is assumed. */
typedef struct px_str {
    const char *base;
    size_t len;
} px_str_t;

/* One header field as received: name and value borrowed. */
typedef struct px_field {
    px_str_t name;
    px_str_t value;
} px_field_t;

#endif
