#include "reccap.h"

reccap_verdict_t reccap_take(reccap_t *c, uint64_t limit)
{
        if (++c->count <= limit)
                return RECCAP_RECORD;
        return reccap_note_once(c) ? RECCAP_NOTE : RECCAP_COUNTED;
}

bool reccap_note_once(reccap_t *c)
{
        if (c->noted)
                return false;
        c->noted = true;
        return true;
}
