/* An addon's note (addons/addon.h: a log line asked for as named fields) as the one audit event
 * (audit_event.h), so the proxy writes it, and the tests read it, through the one renderer. */
#ifndef AUDIT_NOTE_H
#define AUDIT_NOTE_H

#include "addons/addon.h"
#include "audit/audit_event.h"

/* The event of note n (its views borrowed from n). Kind NONE for an unknown note kind. */
audit_event_t audit_event_from_note(const addon_note_t *n);

#endif
