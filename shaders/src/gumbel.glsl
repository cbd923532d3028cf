// Noise for drawing an index from softmax(x / T) by the Gumbel-max trick: the index of the
// largest x_i / T + g_i, each g_i drawn from the standard Gumbel distribution, is distributed
// as softmax(x / T). g_i is a function of the element's index i in x and the 64-bit seed in
// seed_data[0..2] (the includer's `seed_blob`), so a seed gives the same draws every run and
// a pass that looks at an element again (argmax_parts.comp) sees the same value.
// `gumbel_hash` is a 32-bit integer hash with full avalanche (a bijection: xor-shifts and odd
// multiplies); the mirror on the CPU is `vkprism_shaders::reference::gumbel_noise`.

uint gumbel_hash(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// -log(-log(u)) for u uniform in (0, 1) on a grid of 2^-24, never 0 or 1 (so g is finite).
float gumbel_noise(uint index)
{
    const uint k0 = gumbel_hash(seed_data[0]);
    const uint k1 = gumbel_hash(seed_data[1] ^ 0x9e3779b9u);
    const uint h = gumbel_hash(gumbel_hash(index ^ k0) + k1);
    const float u = (float(h >> 8) + 0.5) * (1.0 / 16777216.0);
    return -log(-log(u));
}
