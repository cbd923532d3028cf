// The seed's example as written: `f16vec4 + 123` is not GLSL, so fp16pa/fp16sa fail with a hint.
vkprism::compute_shader! {
    pub mod k,
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
}

fn main() {}
