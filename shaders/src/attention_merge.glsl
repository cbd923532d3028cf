// Merging a row's shares of split attention (part [rows][splits][d + 2], each share an
// unnormalized output o_s with its running maximum m_s and sum l_s) into o:
// o = Σ e^(m_s - M) o_s / Σ e^(m_s - M) l_s with M the largest m_s (a share that saw no key has
// m_s = -inf and weighs 0; a row whose shares saw none gives 0). Used by attention_combine.comp
// (a pass of its own) and by the row kernels' last share to finish (attention.comp's
// `combine_last`). The including kernel declares part_data (float, readable), o_data (sfp),
// push constants with `d` and `splits`, and includes rows.glsl first.

// Each share's weight e^(m_s - M), for the first MAX_SPLITS shares (later ones computed again
// where they are read). An includer whose shares are few defines MERGE_MAX_SPLITS smaller, to
// spare shared memory.
#ifndef MERGE_MAX_SPLITS
#define MERGE_MAX_SPLITS 1024
#endif
const int MAX_SPLITS = MERGE_MAX_SPLITS;
shared float merge_weight[MAX_SPLITS];

float share_weight(int base, int s, float big)
{
    if (s < MAX_SPLITS) return merge_weight[s];
    const float ms = part_data[base + s * (p.d + 2) + p.d];
    return ms > rows_neg_inf() ? exp(ms - big) : 0.0;
}

// Shares whose values an invocation loads at once, with the maxima and sums.
const int HELD_SHARES = 8;

// Row `row`'s shares merged into o at o_at. Every load the merge needs first is issued before
// any is used (each invocation's first share's maximum and sum, and its first output
// dimension's value in the first HELD_SHARES shares), so a row of a few shares waits on memory
// once; further shares and dimensions are read as they come, four shares at a time. Every
// invocation of the workgroup calls it.
void merge_shares(int row, int o_at)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    const int stride = p.d + 2;
    const int base = row * p.splits * stride;
    float m_first = rows_neg_inf(), l_first = 0.0;
    if (lid < p.splits)
    {
        m_first = part_data[base + lid * stride + p.d];
        l_first = part_data[base + lid * stride + p.d + 1];
    }
    float held[HELD_SHARES];
    [[unroll]] for (int s = 0; s < HELD_SHARES; s++)
        held[s] = lid < p.d && s < p.splits ? part_data[base + s * stride + lid] : 0.0;
    float big = m_first;
    for (int s = lid + size; s < p.splits; s += size)
        big = max(big, part_data[base + s * stride + p.d]);
    big = rows_max(big);
    float l = 0.0;
    for (int s = lid; s < p.splits; s += size)
    {
        const float ms = s == lid ? m_first : part_data[base + s * stride + p.d];
        const float ls = s == lid ? l_first : part_data[base + s * stride + p.d + 1];
        const float w = ms > rows_neg_inf() ? exp(ms - big) : 0.0;
        if (s < MAX_SPLITS) merge_weight[s] = w;
        l += w * ls;
    }
    // The sum's barriers also make every weight visible.
    l = rows_sum(l);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (int e = lid; e < p.d; e += size)
    {
        vec4 a = vec4(0.0);
        int s = 0;
        if (e == lid)
        {
            [[unroll]] for (int h = 0; h < HELD_SHARES; h++)
                if (h < p.splits) a[h % 4] += share_weight(base, h, big) * held[h];
            s = HELD_SHARES;
        }
        for (; s + 4 <= p.splits; s += 4)
        {
            const int at = base + s * stride + e;
            const vec4 v = vec4(part_data[at], part_data[at + stride], part_data[at + 2 * stride],
                                part_data[at + 3 * stride]);
            const vec4 w = vec4(share_weight(base, s, big), share_weight(base, s + 1, big),
                                share_weight(base, s + 2, big), share_weight(base, s + 3, big));
            a += w * v;
        }
        for (; s < p.splits; s++) a.x += share_weight(base, s, big) * part_data[base + s * stride + e];
        buffer_st1(o_data, o_at + e, afp(((a.x + a.y) + (a.z + a.w)) * inv));
    }
}
