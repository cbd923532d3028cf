// Q's rows, and K and V a step ahead, staged through shared memory for the attention kernels
// on matrices (attention_cm.comp, attention_cm2.comp). The includer declares THREADS
// (invocations), BC (keys a step), D (the head dimension) and D8 = D / 8, KS (a staged row's
// octets), `shared uvec4 kv_smem[]` of at least 2 * BC rows of KS (the K tile, then the V
// tile; Q's rows before the loop), q_data, k_data and v_data as uvec4 arrays, and the push
// constants p (sq, skv, q_stride, kv_stride).

// Query rows first .. first + rows - 1 of head h into kv_smem's first rows, an octet a store
// (zeros past sq).
void stage_q(int tid, int n, int h, int first, int rows)
{
    for (int l = tid; l < rows * D8; l += THREADS)
    {
        const int r = l / D8, c = l % D8, i = first + r;
        kv_smem[r * KS + c] = i < p.sq ? q_data[((n * p.sq + i) * p.q_stride + h * D) / 8 + c] : uvec4(0);
    }
}

// Octets of K (and of V) each invocation moves per step.
const int KV_LOADS = (BC * D8 + THREADS - 1) / THREADS;

// This invocation's octets of the K and V rows j0 .. j0 + BC of key/value head kvh (zeros
// past skv): loaded a step ahead, so they arrive while the current step computes.
void load_kv(int tid, int n, int kvh, int j0, out uvec4 rk[KV_LOADS], out uvec4 rv[KV_LOADS])
{
    [[unroll]] for (int i = 0; i < KV_LOADS; i++)
    {
        const int l = tid + i * THREADS;
        const int r = l / D8, c = l % D8, j = j0 + r;
        rk[i] = uvec4(0);
        rv[i] = uvec4(0);
        if (l < BC * D8 && j < p.skv)
        {
            const int at = ((n * p.skv + j) * p.kv_stride + kvh * D) / 8 + c;
            rk[i] = k_data[at];
            rv[i] = v_data[at];
        }
    }
}

void store_kv(int tid, uvec4 rk[KV_LOADS], uvec4 rv[KV_LOADS])
{
    [[unroll]] for (int i = 0; i < KV_LOADS; i++)
    {
        const int l = tid + i * THREADS;
        if (l >= BC * D8) break;
        const int r = l / D8, c = l % D8;
        kv_smem[r * KS + c] = rk[i];
        kv_smem[(BC + r) * KS + c] = rv[i];
    }
}
