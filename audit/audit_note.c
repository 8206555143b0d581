#include "audit/audit_note.h"

audit_event_t audit_event_from_note(const addon_note_t *n)
{
    audit_event_t ev = {.kind = AUDIT_EV_NONE};
    switch (n->kind) {
    case ADDON_NOTE_STRIPPED:
        ev.kind = AUDIT_EV_STRIPPED;
        break;
    case ADDON_NOTE_COLLAPSED:
        ev.kind = AUDIT_EV_COLLAPSED;
        break;
    case ADDON_NOTE_WARNING:
        ev.kind = AUDIT_EV_WARNING;
        break;
    case ADDON_NOTE_GHAPP_TOKEN:
        ev.kind = AUDIT_EV_GHAPP_TOKEN;
        break;
    case ADDON_NOTE_GHAPP_REPOS:
        ev.kind = AUDIT_EV_GHAPP_REPOS;
        break;
    case ADDON_NOTE_GRAPHQL_SCOPE:
        ev.kind = AUDIT_EV_GRAPHQL_SCOPE;
        break;
    }
    ev.method = n->method;
    ev.url = n->url;
    ev.header = n->header;
    ev.count = n->count;
    ev.tail = n->tail;
    return ev;
}
