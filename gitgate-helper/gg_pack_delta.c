/*
 * git-gate's pack reader: the delta format (gg_pack.h), as git's
 * Documentation/gitformat-pack.txt describes it:
 *
 *   delta     the base's size and the result's (7-bit varints), then ops:
 *             0x80 | which offset and size bytes follow (a copy from the
 *             base; size 0 means 0x10000), 1-127 (an insert of that many
 *             literal bytes), 0 (invalid)
 *
 * Walked op by op (gg_delta_init(), gg_delta_next()) or applied
 * (gg_delta_apply(); gg_delta_apply_slack() for the reader's own
 * buffers).  Nothing here trusts the bytes: every op is checked against
 * both sizes before it is used.
 */

#include <string.h>

#include "gg_pack_int.h"


static int
gg_varint(uint64_t *out, const unsigned char **pp, const unsigned char *end)
{
    int                   shift;
    uint64_t              v;
    unsigned              c;
    const unsigned char  *p;

    p = *pp;
    v = 0;
    shift = 0;
    do {
        if (p == end || shift > 63 - 7) {
            return -1;
        }
        c = *p++;
        v |= (uint64_t) (c & 0x7f) << shift;
        shift += 7;
    } while (c & 0x80);

    *out = v;
    *pp = p;
    return 0;
}


int
gg_delta_init(gg_delta_iter_t *it, const unsigned char *delta, size_t len)
{
    it->p = delta;
    it->end = delta + len;
    it->done = 0;
    if (gg_varint(&it->src_size, &it->p, it->end) != 0
        || gg_varint(&it->dst_size, &it->p, it->end) != 0)
    {
        return -1;
    }
    return 0;
}


int
gg_delta_next(gg_delta_iter_t *it, gg_delta_op_t *op)
{
    int       b;
    unsigned  c;
    uint64_t  off, size;

    if (it->p == it->end) {
        return it->done == it->dst_size ? 0 : -1;
    }

    c = *it->p++;

    if (c & 0x80) {
        off = 0;
        size = 0;
        for (b = 0; b < 4; b++) {
            if (c & (1u << b)) {
                if (it->p == it->end) {
                    return -1;
                }
                off |= (uint64_t) *it->p++ << (8 * b);
            }
        }
        for (b = 0; b < 3; b++) {
            if (c & (0x10u << b)) {
                if (it->p == it->end) {
                    return -1;
                }
                size |= (uint64_t) *it->p++ << (8 * b);
            }
        }
        if (size == 0) {
            size = 0x10000;
        }
        if (off > it->src_size || size > it->src_size - off
            || size > it->dst_size - it->done)
        {
            return -1;
        }
        op->copy = 1;
        op->off = off;
        op->len = (size_t) size;
        op->data = NULL;

    } else if (c != 0) {
        if ((size_t) (it->end - it->p) < c
            || c > it->dst_size - it->done)
        {
            return -1;
        }
        op->copy = 0;
        op->off = 0;
        op->len = c;
        op->data = it->p;
        it->p += c;

    } else {
        /* reserved: git refuses it too */
        return -1;
    }

    it->done += op->len;
    return 1;
}


int
gg_delta_apply(unsigned char *dst, size_t dst_len, const unsigned char *base,
    size_t base_len, const unsigned char *delta, size_t delta_len)
{
    int              rc;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    if (gg_delta_init(&it, delta, delta_len) != 0
        || it.src_size != base_len || it.dst_size != dst_len)
    {
        return -1;
    }

    /* every op checked against both sizes: dst + done stays in dst */
    while ((rc = gg_delta_next(&it, &op)) == 1) {
        memcpy(dst + (it.done - op.len),
               op.copy ? base + op.off : op.data, op.len);
    }
    return rc;
}


/*
 * gg_delta_apply() for the reader's own buffers, which all have
 * GG_SLACK bytes past their end (the object's, the base's, the inflated
 * delta's): an op of up to GG_SLACK bytes is copied as a fixed-size block
 * (a few vector moves, where most ops of a delta are short), its excess
 * overwritten by the next op or landing in the slack.  The same checks as
 * gg_delta_next(), op by op.
 */
int
gg_delta_apply_slack(unsigned char *dst, size_t dst_len,
    const unsigned char *base, size_t base_len,
    const unsigned char *delta, size_t delta_len)
{
    int                   b;
    size_t                done;
    unsigned              c;
    uint64_t              off, size;
    gg_delta_iter_t       it;
    const unsigned char  *p, *end;

    if (gg_delta_init(&it, delta, delta_len) != 0
        || it.src_size != base_len || it.dst_size != dst_len)
    {
        return -1;
    }
    p = it.p;
    end = it.end;
    done = 0;

    while (p < end) {
        c = *p++;

        if (c & 0x80) {
            off = 0;
            size = 0;
            for (b = 0; b < 4; b++) {
                if (c & (1u << b)) {
                    if (p == end) {
                        return -1;
                    }
                    off |= (uint64_t) *p++ << (8 * b);
                }
            }
            for (b = 0; b < 3; b++) {
                if (c & (0x10u << b)) {
                    if (p == end) {
                        return -1;
                    }
                    size |= (uint64_t) *p++ << (8 * b);
                }
            }
            if (size == 0) {
                size = 0x10000;
            }
            if (off > base_len || size > base_len - off
                || size > dst_len - done)
            {
                return -1;
            }
            if (size <= GG_SLACK) {
                memcpy(dst + done, base + off, GG_SLACK);
            } else {
                memcpy(dst + done, base + off, (size_t) size);
            }
            done += (size_t) size;

        } else if (c != 0) {
            if ((size_t) (end - p) < c || c > dst_len - done) {
                return -1;
            }
            memcpy(dst + done, p, GG_SLACK);
            p += c;
            done += c;

        } else {
            return -1;
        }
    }

    return done == dst_len ? 0 : -1;
}
