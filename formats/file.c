/*
 * file.c - format_write_file: a complete file or none (file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

/* A temporary beside path, 0644 (mkstemp makes 0600; saved files are for
 * sharing); NULL with errno set. */
static FILE *open_temp(char *tmp)
{
    int fd = mkstemp(tmp);
    if (fd < 0)
        return NULL;
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
    }
    return f;
}

tg_status format_write_file(const char *path, const format_wbuf *parts, int n, char *err,
                            size_t errlen)
{
    struct stat sb;
    int special = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode); /* /dev/stdout */
    size_t tlen = strlen(path) + 16;
    char *tmp = malloc(tlen);
    if (!tmp) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot write: out of memory", path);
        return TG_ERR_NOMEM;
    }
    snprintf(tmp, tlen, "%s.tmpXXXXXX", path);
    FILE *f = special ? fopen(path, "wb") : open_temp(tmp);
    int bad = !f;
    for (int i = 0; !bad && i < n; i++)
        bad = parts[i].len != 0 && fwrite(parts[i].p, 1, parts[i].len, f) != parts[i].len;
    int e = bad ? errno : 0;
    if (f && fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && !special && rename(tmp, path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
        if (f && !special)
            unlink(tmp);
    }
    free(tmp);
    return bad ? TG_ERR_IO : TG_OK;
}
