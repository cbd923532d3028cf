// The function and the indexing of the broadcasting binary kernels (binary_bcast.comp,
// binary_bcast4.comp). `op` (constant 0): 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min, 6 pow, in
// fp32 in every variant. `contiguous` (constant 1): 1 where a, b and out have one shape (each
// is indexed as out); otherwise out is [d0, d1, d2, d3] row-major (d0 implied by n) and element
// (c0, c1, c2, c3) reads a at c·a_stride and b at c·b_stride (stride 0 along a broadcast dim).

vec4 binary_f(vec4 a, vec4 b)
{
    if (op == 0) return a + b;
    if (op == 1) return a - b;
    if (op == 2) return a * b;
    if (op == 3) return a / b;
    if (op == 4) return max(a, b);
    if (op == 5) return min(a, b);
    return pow(a, b);
}

// The indices of a's and b's element (or vec4) for out's `i`.
ivec2 operand_indices(int i)
{
    if (contiguous == 1) return ivec2(i);
    const int c3 = i % p.d3;
    int t = i / p.d3;
    const int c2 = t % p.d2;
    t /= p.d2;
    const int c1 = t % p.d1;
    const int c0 = t / p.d1;
    return ivec2(c0 * p.a0 + c1 * p.a1 + c2 * p.a2 + c3 * p.a3,
                 c0 * p.b0 + c1 * p.b1 + c2 * p.b2 + c3 * p.b3);
}
