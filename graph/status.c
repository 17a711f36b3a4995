#include "status.h"

static const char *const status_text[] = {
#define TG_STATUS_TEXT_(name, text) text,
    TG_STATUS_LIST(TG_STATUS_TEXT_)
#undef TG_STATUS_TEXT_
};

const char *tg_status_str(tg_status s)
{
    if ((unsigned)s >= TG_STATUS_COUNT)
        return "unknown status";
    return status_text[s];
}
