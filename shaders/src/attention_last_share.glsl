// The last share of a split row merges it (`combine_last`): for the row kernels that split a
// row's keys between workgroups (attention.comp, attention_decode.comp). The includer declares
// `coherent buffer count_blob { int count_data[]; }` (zero before and after a dispatch) and
// includes attention_merge.glsl first.

// Whether this workgroup finished its row's last share.
shared bool last_share;

// Called by every invocation once its share of row `row` is in part_data: counts the share
// done, and where it was the row's last, merges the row into o and zeroes its count. Each
// invocation's writes are made visible beyond the workgroup before the count says so, and the
// last reads the others' through the coherent buffer after seeing the count.
void merge_if_last(int row, int o_at)
{
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0) last_share = atomicAdd(count_data[row], 1) == p.splits - 1;
    barrier();
    if (!last_share) return;
    memoryBarrierBuffer();
    merge_shares(row, o_at);
    if (gl_LocalInvocationID.x == 0) count_data[row] = 0;
}
