/*
 * file.c - format_src: a file or stream read in steps, each as far as
 * the bytes already read declare, with read(2) so that a pipe is judged
 * by its first bytes; format_write_file: a complete file or none (file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../graph/alloc.h"
#include "../graph/errors.h"
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

/* The message for a failed read(2) of s. */
static tg_status src_read_error(format_src *s, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: at byte %zu: read error: %s", s->name, s->len,
                 strerror(errno));
    return TG_ERR_IO;
}

tg_status format_src_open(format_src *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->name = path;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return TG_ERR_IO;
    }
    struct stat sb;
    int bad = fstat(s->fd, &sb) != 0;
    if (bad || S_ISDIR(sb.st_mode)) {
        if (err && errlen)
            snprintf(err, errlen, bad ? "%s: cannot stat: %s" : "%s: is a directory%s", path,
                     bad ? strerror(errno) : "");
        close(s->fd);
        s->fd = -1;
        return TG_ERR_IO;
    }
    s->regular = S_ISREG(sb.st_mode);
    s->size = s->regular ? (uint64_t)sb.st_size : 0;
    return TG_OK;
}

tg_status format_src_fill(format_src *s, size_t n, const void *magic, size_t mlen, char *err,
                          size_t errlen)
{
    while (s->len < n && !s->eof) {
        if (magic && s->len && memcmp(s->buf, magic, s->len < mlen ? s->len : mlen) != 0)
            return TG_OK; /* the caller's check names the bad magic */
        if (s->len == s->cap) {
            /* Grown as bytes arrive, never past n: a declared size costs
             * memory only once the bytes are there. */
            size_t ncap = s->cap < 32768 ? 65536 : s->cap <= SIZE_MAX / 2 ? s->cap * 2 : n;
            /* A regular file's size is the OS's word: one allocation (+ 1:
             * the read that finds the end), unless it grew meanwhile. */
            if (s->regular && s->size < SIZE_MAX && (size_t)s->size + 1 > s->cap)
                ncap = (size_t)s->size + 1;
            ncap = ncap < n ? ncap : n;
            uint8_t *nb = tg_realloc(s->buf, ncap);
            if (!nb) {
                if (err && errlen)
                    snprintf(err, errlen, "%s: out of memory reading %zu bytes", s->name, ncap);
                return TG_ERR_NOMEM;
            }
            s->buf = nb;
            s->cap = ncap;
        }
        /* read(2), not fread: a pipe's first bytes are looked at as soon as
         * they arrive, rather than after a whole buffer that may never come. */
        size_t want = s->cap - s->len;
        if (magic && s->len < mlen && mlen - s->len < want)
            want = mlen - s->len;
        ssize_t got = read(s->fd, s->buf + s->len, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return src_read_error(s, err, errlen);
        s->len += (size_t)got;
        s->eof = got == 0;
    }
    return TG_OK;
}

tg_status format_src_read(format_src *s, void *dst, size_t n, size_t *got, char *err,
                          size_t errlen)
{
    size_t k = 0;
    while (k < n) {
        ssize_t r = read(s->fd, (uint8_t *)dst + k, n - k < (1u << 30) ? n - k : (1u << 30));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *got = k;
            if (err && errlen)
                snprintf(err, errlen, "%s: at byte %zu: read error: %s", s->name, s->len + k,
                         strerror(errno));
            return TG_ERR_IO;
        }
        if (r == 0)
            break;
        k += (size_t)r;
    }
    *got = k;
    return TG_OK;
}

void format_src_close(format_src *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    tg_free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}
