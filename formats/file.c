/*
 * file.c - format_read_file, format_read_stream: a file read whole
 * without trusting its size; format_write_file: a complete file or none
 * (file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../graph/alloc.h"
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
    char *tmp = tg_malloc(tlen);
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
    tg_free(tmp);
    return bad ? TG_ERR_IO : TG_OK;
}

tg_status format_write_bytes(const char *path, const void *p, size_t n, char *err,
                             size_t errlen)
{
    format_wbuf whole = {(uint8_t *)p, n, n, 0}; /* only read */
    return format_write_file(path, &whole, 1, err, errlen);
}

tg_status format_read_stream(FILE *f, const char *name, size_t max, size_t hint, uint8_t **buf,
                             size_t *len, char *err, size_t errlen)
{
    size_t first = hint ? hint : 65536; /* hint + 1: the read that finds the end */
    size_t cap = (first < max ? first : max) + (max < SIZE_MAX), n = 0;
    uint8_t *p = tg_malloc(cap);
    while (p && n < max) {
        if (n == cap) {
            size_t ncap = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            uint8_t *np = ncap > cap ? tg_realloc(p, ncap) : NULL;
            if (!np) {
                tg_free(p);
                p = NULL;
                break;
            }
            p = np;
            cap = ncap;
        }
        size_t want = cap - n < max - n ? cap - n : max - n;
        size_t got = fread(p + n, 1, want, f);
        n += got;
        if (got < want)
            break;
    }
    *buf = NULL;
    *len = 0;
    if (!p) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory reading the file", name);
        return TG_ERR_NOMEM;
    }
    if (ferror(f)) {
        if (err && errlen)
            snprintf(err, errlen, "%s: read error: %s", name, strerror(errno));
        tg_free(p);
        return TG_ERR_IO;
    }
    *buf = p;
    *len = n;
    return TG_OK;
}

tg_status format_read_file(const char *path, size_t max, uint8_t **buf, size_t *len,
                           uint64_t *size, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return TG_ERR_IO;
    }
    struct stat sb;
    int have = fstat(fileno(f), &sb) == 0;
    if (have && S_ISDIR(sb.st_mode)) {
        fclose(f);
        if (err && errlen)
            snprintf(err, errlen, "%s: is a directory", path);
        return TG_ERR_IO;
    }
    /* A regular file's size is the OS's word, not the content's: a fair
     * first allocation (the read still stops where the bytes do). */
    size_t hint = have && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size < SIZE_MAX
                      ? (size_t)sb.st_size : 0;
    tg_status st = format_read_stream(f, path, max, hint, buf, len, err, errlen);
    fclose(f);
    if (size)
        *size = have && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : *len;
    return st;
}
