vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { sfpvec4 a_blob_data[]; };
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    afpvec4 v = buffer_ld3(a_blob_data, i);
}
"#,
}

fn main() {}
