#version 450
// y[r][c] = table[ids[r]][c]: table is [vocab, dim], ids `n` int32 indices, y [n, dim]. An id
// outside [0, vocab) (ids live on the GPU: nothing can check them before the dispatch) gives a
// row of zeros and reads nothing. One element per loop step, a grid apart (the grid capped at
// 65,535 workgroups); values copied as stored.
layout (local_size_x = 256) in;

layout (binding = 0) readonly buffer table_blob { sfp table_data[]; };
layout (binding = 1) readonly buffer ids_blob { int ids_data[]; };
layout (binding = 2) writeonly buffer y_blob { sfp y_data[]; };

layout (push_constant) uniform parameter { int total; int dim; int vocab; } p;

void main()
{
    const uint grid = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < uint(p.total); i += grid)
    {
        const int r = int(i) / p.dim, c = int(i) % p.dim;
        const int id = ids_data[r];
        if (uint(id) < uint(p.vocab))
        {
            buffer_cp1(y_data, int(i), table_data, id * p.dim + c);
        }
        else
        {
            buffer_st1(y_data, int(i), afp(0.0));
        }
    }
}
