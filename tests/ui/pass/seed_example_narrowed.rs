// The seed's example as written, in the variants where it is valid GLSL.
vkprism::compute_shader! {
    pub mod add_123,
    src: r#"
#version 450

layout (binding = 0) readonly buffer a_blob { sfpvec4 a_blob_data[]; };
layout (binding = 1) writeonly buffer b_blob { sfpvec4 b_blob_data[]; };

void main()
{
    const int i = int(gl_GlobalInvocationID.x);

    afpvec4 v = buffer_ld4(a_blob_data, i);

    v = v + 123;

    buffer_st4(b_blob_data, i, v);
}
"#,
    variants: [fp32, fp16p, fp16s, bf16p, bf16s],
}

fn main() {
    assert_eq!(add_123::VARIANT_NAMES.len(), 5);
    assert_eq!(add_123::INFO.local_size[0].spec_id, Some(233));
}
