#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// A draw from each row of x [rows, n] as `transformers` samples: the logits times 1/T; cut to
// those at least the top_k-th largest (ties kept; top_k 0: none cut); cut again to those at
// least the largest value whose tokens' probabilities (softmax over what the first cut kept)
// add up to top_p of it (ties kept; top_p 1: none cut); then the index of the largest of what
// is left plus Gumbel noise (gumbel.glsl), which is a draw from its softmax. A NaN counts as
// -inf (the least likely). One workgroup a row; each invocation holds HELD of its row's values
// in registers (the whole row up to HELD · the workgroup's size) and reads the rest from
// memory in every pass.
//
// Each cut's value is searched over the values' order keys (unsigned integers ordered as the
// floats are) by narrowing a range [lo, hi] that holds it: a pass over the row counts (and
// sums the probabilities of) the values from each of three split points to hi, and keeps the
// part between the two splits the cut lies between. The splits are the range's midpoint and
// two on either side of where the cut would lie if the range's values were spread evenly
// (`splits_for`), so a pass halves the range at least and, where the values are about even,
// leaves few in it. Those (a few hundred at most) are then gathered into shared memory in a
// fixed order and each one counts and sums those at least it itself: the cut is the largest
// that reaches what is wanted. Counts are exact; the sums run in fixed orders, so a row and a seed
// always give the same draw.
layout (local_size_x = 1024) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer out_blob { int out_data[]; };
// The draw's 64-bit seed, two words.
layout (binding = 2) readonly buffer seed_blob { uint seed_data[]; };

layout (push_constant) uniform parameter {
    int rows; int n; float inv_temperature; int top_k; float top_p;
} p;

#include "rows.glsl"
#include "gumbel.glsl"

const int HELD = 32;
// The most values left in a search's range when they are ranked against each other: a row
// held in registers stops narrowing the range at SHORT_RANKED (its passes are cheap), a longer
// one, whose passes read memory, at RANKED.
const int RANKED = 512;
const int SHORT_RANKED = 256;

// The values a search's range narrows to before they are ranked. The gathered values' keys
// and probabilities live in rows.glsl's rows_index and rows_value (no reduction runs while
// they are ranked), so at most the workgroup's size of them, in whole eights (the ranking
// reads eight at a time).
int ranked_limit()
{
    const int limit = p.n > HELD * int(gl_WorkGroupSize.x) ? RANKED : SHORT_RANKED;
    return min(limit, int(gl_WorkGroupSize.x) / 8 * 8);
}

// This invocation's first HELD values of the row (lid + j · size), -inf past its end.
float held[HELD];
int row_base;
// The row's largest value: probabilities are exp(v - row_max).
float row_max;

shared uint found_key;

// Element i of the row times 1/T, a NaN as -inf.
float scaled(int i)
{
    const float v = float(buffer_ld1(x_data, row_base + i)) * p.inv_temperature;
    return isnan(v) ? rows_neg_inf() : v;
}

// Unsigned keys in the floats' order (-0 just below +0).
uint order_key(float v)
{
    const uint u = floatBitsToUint(v);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

// The float whose key is k.
float key_value(uint k)
{
    return uintBitsToFloat((k & 0x80000000u) != 0u ? k & 0x7fffffffu : ~k);
}

// The keys a pass tests: lo < each ≤ hi, ascending (two may be equal).
struct Splits
{
    uint at[3];
};

// A key in (lo, hi] near the value v: the keys' midpoint where v's key is outside.
uint key_within(float v, uint lo, uint hi)
{
    const uint k = order_key(v);
    return isnan(v) || k <= lo || k > hi ? lo + (hi - lo) / 2u + 1u : k;
}

// Where the next pass tests the range [lo, hi] (`within` values, of probability
// `within_mass`) for a cut that `need` more of its count (or probability, by_mass) reaches:
// where that many would be reached if the values were spread evenly over the range's values,
// minus and plus the width of an eighth of `ranked_limit()` values, and the values' midpoint
// (or, where lo is -inf, below hi by more than hi's size), so that a pass narrows the range at
// least by half and, where the values are about even, to fewer than that limit.
Splits splits_for(uint lo, uint hi, float within, float within_mass, float need, bool by_mass)
{
    const float a = key_value(lo), b = key_value(hi);
    const float mid = isinf(a) ? b - (abs(b) + 1.0) : a * 0.5 + b * 0.5;
    float guess = mid, width = 0.0;
    if (!isinf(a) && !isinf(b))
    {
        const float f = clamp(need / (by_mass ? within_mass : within), 0.0, 1.0);
        guess = by_mass ? b + log(1.0 - f * (1.0 - exp(a - b))) : b - (b - a) * f;
        width = (b - a) * float(ranked_limit() / 8) / within;
    }
    uint k[3] = uint[3](key_within(guess - width, lo, hi), key_within(mid, lo, hi),
        key_within(guess + width, lo, hi));
    // Ascending: the midpoint may lie anywhere against the guess.
    const uint m = k[1], low = min(k[0], k[2]), high = max(k[0], k[2]);
    return Splits(uint[3](min(low, m), clamp(m, low, high), max(high, m)));
}

shared vec4 sums_part[gl_WorkGroupSize.x];
shared vec4 sums_total;

// Sums of v across the workgroup (as rows_sum).
vec4 sums(vec4 v)
{
    barrier();
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
    v = subgroupAdd(v);
    if (subgroupElect()) sums_part[gl_SubgroupID] = v;
    barrier();
    if (gl_SubgroupID == 0u)
    {
        vec4 w = vec4(0.0);
        for (uint k = gl_SubgroupInvocationID; k < rows_subgroups(); k += gl_SubgroupSize)
            w += sums_part[k];
        w = subgroupAdd(w);
        if (subgroupElect()) sums_total = w;
    }
    barrier();
    return sums_total;
#else
    const uint lid = gl_LocalInvocationID.x;
    sums_part[lid] = v;
    barrier();
    for (uint s = 1u; s < gl_WorkGroupSize.x; s *= 2u)
    {
        if ((lid & (2u * s - 1u)) == 0u && lid + s < gl_WorkGroupSize.x)
            sums_part[lid] += sums_part[lid + s];
        barrier();
    }
    return sums_part[0];
#endif
}

// The count (and, where by_mass, the probability) of the row's values whose keys are in
// [at[i], hi] for each of the splits, across the workgroup; the fourth of each the whole
// range [lo, hi]'s, lo below every split.
void range_totals(uint lo, Splits t, uint hi, bool by_mass, out vec4 count, out vec4 mass)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    vec4 c = vec4(0.0), s = vec4(0.0);
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const uint k = order_key(held[j]);
        if (lid + j * size < p.n && k >= lo && k <= hi)
        {
            const vec4 in_ = vec4(k >= t.at[0], k >= t.at[1], k >= t.at[2], true);
            c += in_;
            if (by_mass) s += in_ * exp(held[j] - row_max);
        }
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        const uint k = order_key(v);
        if (k >= lo && k <= hi)
        {
            const vec4 in_ = vec4(k >= t.at[0], k >= t.at[1], k >= t.at[2], true);
            c += in_;
            if (by_mass) s += in_ * exp(v - row_max);
        }
    }
    count = sums(c);
    mass = by_mass ? sums(s) : vec4(0.0);
}

// This invocation's offset among the workgroup's: the sum of `mine` over the invocations
// before it (through rows.glsl's rows_index, which no reduction is using then).
uint offset_of(uint mine)
{
    const uint lid = gl_LocalInvocationID.x;
    barrier();
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
    const uint before = subgroupExclusiveAdd(mine);
    if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u || lid == gl_WorkGroupSize.x - 1u)
        rows_index[gl_SubgroupID] = int(before + mine);
    barrier();
    if (gl_SubgroupID == 0u)
    {
        uint carry = 0u;
        for (uint base = 0u; base < rows_subgroups(); base += gl_SubgroupSize)
        {
            const uint k = base + gl_SubgroupInvocationID;
            const uint t = k < rows_subgroups() ? uint(rows_index[k]) : 0u;
            const uint ahead = subgroupExclusiveAdd(t);
            if (k < rows_subgroups()) rows_index[k] = int(carry + ahead);
            carry += subgroupAdd(t);
        }
    }
    barrier();
    return uint(rows_index[gl_SubgroupID]) + before;
#else
    rows_index[lid] = int(mine);
    barrier();
    for (uint s = 1u; s < gl_WorkGroupSize.x; s *= 2u)
    {
        const int add = lid >= s ? rows_index[lid - s] : 0;
        barrier();
        rows_index[lid] += add;
        barrier();
    }
    return uint(rows_index[lid]) - mine;
#endif
}

// Gathers the values whose keys are in [a, b] (at most `ranked_limit()`) into rows_index (their
// keys) and rows_value (their probabilities), invocation by invocation, each its own in order.
void gather(uint a, uint b)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    uint mine = 0u;
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const uint k = order_key(held[j]);
        mine += lid + j * size < p.n && k >= a && k <= b ? 1u : 0u;
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const uint k = order_key(scaled(i));
        mine += k >= a && k <= b ? 1u : 0u;
    }
    uint at = offset_of(mine);
    // Every offset read out of rows_index before it holds keys; past the gathered values,
    // keys no value has (below every value's) and no probability.
    barrier();
    for (int i = lid; i < ranked_limit(); i += size)
    {
        rows_index[i] = 0;
        rows_value[i] = 0.0;
    }
    barrier();
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const uint k = order_key(held[j]);
        if (lid + j * size < p.n && k >= a && k <= b)
        {
            rows_index[at] = int(k);
            rows_value[at] = exp(held[j] - row_max);
            at++;
        }
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        const uint k = order_key(v);
        if (k >= a && k <= b)
        {
            rows_index[at] = int(k);
            rows_value[at] = exp(v - row_max);
            at++;
        }
    }
    barrier();
}

// The largest of the `count` gathered keys whose count (or probability, by_mass) of the
// gathered keys at least it, plus `above`, reaches `goal`; lo where none does.
uint rank_gathered(uint count, vec2 above, bool by_mass, float goal, uint lo)
{
    if (gl_LocalInvocationID.x == 0u) found_key = lo;
    barrier();
    for (uint i = gl_LocalInvocationID.x; i < count; i += gl_WorkGroupSize.x)
    {
        const uint x = uint(rows_index[i]);
        vec2 from_x = above;
        // Eight at a time: the keys past `count` count nothing.
        for (uint j = 0u; j < count; j += 8u)
            [[unroll]] for (uint u = 0u; u < 8u; u++)
                if (uint(rows_index[j + u]) >= x) from_x += vec2(1.0, rows_value[j + u]);
        if ((by_mass ? from_x.y : from_x.x) >= goal) atomicMax(found_key, x);
    }
    barrier();
    return found_key;
}

// The largest key t in [lo, hi] from which the row's values reach `goal` in count (or in
// probability, by_mass): what lo reaches, with `above` the count and probability of the
// values past hi and `within` those of the values in [lo, hi].
uint search(uint lo, uint hi, vec2 above, vec2 within, bool by_mass, float goal)
{
    while (lo < hi && within.x > float(ranked_limit()))
    {
        const Splits t = splits_for(lo, hi, within.x, within.y,
            goal - (by_mass ? above.y : above.x), by_mass);
        vec4 count, mass;
        range_totals(lo, t, hi, by_mass, count, mass);
        // The last split whose values from it on reach the goal narrows the range to it and
        // the next split; none: the range ends below the first.
        int last = -1;
        [[unroll]] for (int i = 0; i < 3; i++)
            if ((by_mass ? above.y + mass[i] : above.x + count[i]) >= goal) last = i;
        const vec2 past_next = last < 2 ? vec2(count[last + 1], mass[last + 1]) : vec2(0.0);
        const vec2 from_last = last >= 0 ? vec2(count[last], mass[last]) : vec2(count.w, mass.w);
        if (last >= 0) lo = t.at[last];
        if (last < 2) hi = t.at[last + 1] - 1u;
        within = from_last - past_next;
        above += past_next;
    }
    if (lo >= hi) return lo;
    gather(lo, hi);
    return rank_gathered(uint(within.x), above, by_mass, goal, lo);
}

// The index of the largest value plus noise among those whose key is at least t (the first
// on ties).
int draw_from(uint t)
{
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    float best_v = rows_neg_inf();
    int best = -1;
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const int i = lid + j * size;
        if (i < p.n && order_key(held[j]) >= t)
        {
            const float w = held[j] + gumbel_noise(uint(row_base + i));
            if (best < 0 || w > best_v)
            {
                best_v = w;
                best = i;
            }
        }
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        if (order_key(v) >= t)
        {
            const float w = v + gumbel_noise(uint(row_base + i));
            if (best < 0 || w > best_v)
            {
                best_v = w;
                best = i;
            }
        }
    }
    return rows_argmax(best_v, best);
}

void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    const int lid = int(gl_LocalInvocationID.x), size = int(gl_WorkGroupSize.x);
    row_base = row * p.n;
    float m = rows_neg_inf(), least = -rows_neg_inf();
    [[unroll]] for (int j = 0; j < HELD; j++)
    {
        const int i = lid + j * size;
        held[j] = i < p.n ? scaled(i) : rows_neg_inf();
        m = max(m, held[j]);
        if (i < p.n) least = min(least, held[j]);
    }
    for (int i = lid + HELD * size; i < p.n; i += size)
    {
        const float v = scaled(i);
        m = max(m, v);
        least = min(least, v);
    }
    row_max = rows_max(m);
    // The keys of the largest and least values; of +0 and -0 where they are zeros, which
    // max and min do not tell apart.
    const uint top = order_key(row_max == 0.0 ? 0.0 : row_max);
    const bool cut_k = p.top_k > 0 && p.top_k < p.n;
    const bool cut_p = p.top_p < 1.0 && row_max > rows_neg_inf();
    // The key every value reaches (the least's), where anything is cut.
    uint from = 0u;
    if (cut_k || cut_p)
    {
        const float low = rows_min(least);
        from = order_key(low == 0.0 ? -0.0 : low);
    }
    // The top_k-th largest value's key: at least top_k values from it on.
    if (cut_k) from = search(from, top, vec2(0.0), vec2(float(p.n), 0.0), false, float(p.top_k));
    // The largest key from which the values kept reach top_p of their probability.
    if (cut_p)
    {
        vec4 count, mass;
        range_totals(from, Splits(uint[3](top, top, top)), top, true, count, mass);
        from = search(from, top, vec2(0.0), vec2(count.w, mass.w), true, p.top_p * mass.w);
    }
    const int best = draw_from(from);
    if (lid == 0) out_data[row] = max(best, 0);
}
