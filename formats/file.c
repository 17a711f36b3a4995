/*
 * file.c - format_write_file: a complete file or none (file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

tg_status format_write_file(const char *path, const format_wbuf *parts, int n, char *err,
                            size_t errlen)
{
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot write: out of memory", path);
        return TG_ERR_NOMEM;
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int bad = !f;
    for (int i = 0; !bad && i < n; i++)
        bad = parts[i].len != 0 && fwrite(parts[i].p, 1, parts[i].len, f) != parts[i].len;
    int e = bad ? errno : 0;
    if (f && fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
        if (f)
            remove(tmp);
    }
    free(tmp);
    return bad ? TG_ERR_IO : TG_OK;
}
