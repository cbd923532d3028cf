#version 450
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_EXT_control_flow_attributes : require
// The second pass of split attention (attention.comp with `split`): each row's shares merged
// by attention_merge.glsl. One workgroup per row.
layout (local_size_x = 64) in;

layout (binding = 0) readonly buffer part_blob { float part_data[]; };
layout (binding = 1) writeonly buffer o_blob { sfp o_data[]; };

layout (push_constant) uniform parameter {
    int rows; int hq; int d; int o_stride; int splits;
} p;

#include "rows.glsl"
#include "attention_merge.glsl"

void main()
{
    const int row = rows_row();
    if (row >= p.rows) return;
    // Row `row` is (query token, head): its output sits o_stride apart per token.
    merge_shares(row, (row / p.hq) * p.o_stride + (row % p.hq) * p.d);
}
