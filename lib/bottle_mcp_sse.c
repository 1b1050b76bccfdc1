/*
 * MCP gating on a server-sent event stream (bottle_mcp.h): events cut
 * from the stream one at a time, each one's JSON-RPC message filtered as
 * a JSON response is.  Lines end with CRLF, LF or CR (the SSE grammar).
 */

#include <stdlib.h>
#include <string.h>

#include "bottle_mcp.h"


/* the line end at i: its length, 0 if none there, -1 not known yet */

static int
bottle_mcp_eol(const char *buf, size_t len, size_t i)
{
    if (buf[i] == '\n') {
        return 1;
    }

    if (buf[i] != '\r') {
        return 0;
    }

    if (i + 1 == len) {
        return -1;
    }

    return buf[i + 1] == '\n' ? 2 : 1;
}


size_t
bottle_mcp_sse_event(const char *buf, size_t len)
{
    int     e;
    size_t  i, start;

    start = 0;
    i = 0;

    while (i < len) {
        e = bottle_mcp_eol(buf, len, i);

        if (e < 0) {
            return 0;
        }

        if (e == 0) {
            i++;
            continue;
        }

        if (i == start) {
            /* an empty line: the event ends */
            return i + e;
        }

        i += e;
        start = i;
    }

    return 0;
}


/* the next line of ev from *pos: its start and length, or -1 at the end */

static int
bottle_mcp_line(const char *ev, size_t len, size_t *pos, const char **line,
    size_t *n)
{
    int     e;
    size_t  i;

    if (*pos >= len) {
        return -1;
    }

    for (i = *pos; i < len; i++) {
        e = bottle_mcp_eol(ev, len, i);

        if (e != 0) {
            *line = ev + *pos;
            *n = i - *pos;
            *pos = i + (e > 0 ? (size_t) e : 1);
            return 0;
        }
    }

    *line = ev + *pos;
    *n = len - *pos;
    *pos = len;

    return 0;
}


/* a line's field and value (one leading space dropped) */

static void
bottle_mcp_field(const char *line, size_t n, size_t *flen, const char **val,
    size_t *vlen)
{
    const char  *colon;

    colon = memchr(line, ':', n);

    if (colon == NULL) {
        *flen = n;
        *val = line + n;
        *vlen = 0;
        return;
    }

    *flen = colon - line;
    *val = colon + 1;
    *vlen = n - *flen - 1;

    if (*vlen && **val == ' ') {
        (*val)++;
        (*vlen)--;
    }
}


int
bottle_mcp_sse_filter(char **out, size_t *outlen, const bottle_mcp_t *m,
    const bottle_mcp_body_t *b, const char *ev, size_t len)
{
    int          rc, wrote;
    char        *data, *msg, *p;
    size_t       pos, n, flen, vlen, dlen, mlen;
    const char  *line, *val;

    *out = NULL;
    *outlen = 0;

    /* the data lines joined by LF: never longer than the event */

    data = malloc(len + 1);
    if (data == NULL) {
        return -1;
    }

    dlen = 0;
    wrote = 0;
    pos = 0;

    while (bottle_mcp_line(ev, len, &pos, &line, &n) == 0) {
        if (n == 0 || line[0] == ':') {
            continue;
        }

        bottle_mcp_field(line, n, &flen, &val, &vlen);

        if (flen == 5 && memcmp(line, "event", 5) == 0
            && !(vlen == 7 && memcmp(val, "message", 7) == 0))
        {
            /* not a JSON-RPC message: an endpoint, a custom event */
            free(data);
            return 0;
        }

        if (flen == 4 && memcmp(line, "data", 4) == 0) {
            if (wrote) {
                data[dlen++] = '\n';
            }

            memcpy(data + dlen, val, vlen);
            dlen += vlen;
            wrote = 1;
        }
    }

    if (!wrote || dlen == 0) {
        free(data);
        return 0;
    }

    rc = bottle_mcp_filter(&msg, &mlen, m, b, data, dlen);
    free(data);

    if (rc <= 0) {
        return rc == 0 ? 0 : 2;
    }

    /* the other lines as they were, one data line in place of them */

    *out = malloc(len + mlen + 16);
    if (*out == NULL) {
        free(msg);
        return -1;
    }

    p = *out;
    wrote = 0;
    pos = 0;

    while (bottle_mcp_line(ev, len, &pos, &line, &n) == 0) {
        if (n == 0) {
            continue;
        }

        bottle_mcp_field(line, n, &flen, &val, &vlen);

        if (flen == 4 && memcmp(line, "data", 4) == 0) {
            if (!wrote) {
                memcpy(p, "data: ", 6);
                memcpy(p + 6, msg, mlen);
                p += 6 + mlen;
                *p++ = '\n';
                wrote = 1;
            }

            continue;
        }

        memcpy(p, line, n);
        p += n;
        *p++ = '\n';
    }

    *p++ = '\n';
    *outlen = p - *out;
    *p = '\0';         /* as bottle_mcp_filter()'s: within the 16 spare */
    free(msg);

    return 1;
}
