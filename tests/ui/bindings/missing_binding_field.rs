vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_blob_data[]; };
layout (binding = 1) writeonly buffer b_blob { sfpvec4 b_blob_data[]; };
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    buffer_st4(b_blob_data, i, buffer_ld4(a_blob_data, i));
}
"#,
}

fn bind(tensor: &vkprism::Tensor) -> k::BufferBindings<'_> {
    k::BufferBindings { a_blob: tensor }
}

fn main() {}
