#version 450
// y[b][c][r] = x[b][r][c]: x is [batch, rows, cols], y [batch, cols, rows]. A workgroup moves
// square tiles of T × T values (T the workgroup's x size) through shared memory, so both the
// reads of x and the writes of y are along contiguous rows: invocation (tx, ty) reads x's tile
// row ty (then ty + LY, ...) at column tx, and writes y's tile row ty at column tx. The tile
// has T + 1 columns so a column read from shared memory hits distinct banks. Tiles and
// batches are walked a grid apart (each grid dimension capped at 65,535 workgroups), so any
// size is covered. Values pass through fp32 shared memory: exact for every stored format.
layout (local_size_x = 32, local_size_y = 8) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter { int batch; int rows; int cols; } p;

shared float tile[gl_WorkGroupSize.x * (gl_WorkGroupSize.x + 1)];

void main()
{
    const int T = int(gl_WorkGroupSize.x), LY = int(gl_WorkGroupSize.y);
    const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    const int tiles_r = (p.rows + T - 1) / T, tiles_c = (p.cols + T - 1) / T;
    // The loops' bounds are the same for the whole workgroup: the barriers are reached by all.
    for (int b = int(gl_WorkGroupID.z); b < p.batch; b += int(gl_NumWorkGroups.z))
    for (int tr = int(gl_WorkGroupID.y); tr < tiles_r; tr += int(gl_NumWorkGroups.y))
    for (int tc = int(gl_WorkGroupID.x); tc < tiles_c; tc += int(gl_NumWorkGroups.x))
    {
        const int base = b * p.rows * p.cols;
        barrier();
        for (int r = ty; r < T; r += LY)
        {
            const int row = tr * T + r, col = tc * T + tx;
            if (row < p.rows && col < p.cols)
                tile[r * (T + 1) + tx] = float(buffer_ld1(x_data, base + row * p.cols + col));
        }
        barrier();
        for (int c = ty; c < T; c += LY)
        {
            const int col = tc * T + c, row = tr * T + tx;
            if (row < p.rows && col < p.cols)
            {
                buffer_st1(y_data, base + col * p.rows + row, afp(tile[tx * (T + 1) + c]));
            }
        }
    }
}
